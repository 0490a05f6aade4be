"""Prints the table of `scripts/bench.sh --schedules` from the files its runs
left in DIR (see scripts/bench/schedules.sh for their names).

Usage: schedules_table.py DIR REPEATS
"""
import os
import re
import statistics
import sys
import textwrap

from bench_results import (commit, load_averages, machine, ms, pp_step_seconds,
                           read_json, summary)

SCHEDULES = ["gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v"]
# pp-run's summary line with --trace: "bubble: measured 23.1%, predicted
# 20.0% (1f1b, 2 ranks, 4 microbatches)".
BUBBLE = re.compile(r"^bubble: measured ([-\d.]+)%, predicted ([-\d.]+)%", re.MULTILINE)
# The goal: the measured bubble within this many percentage points
# of the predicted one.
BUBBLE_TOLERANCE = 10.0


def bubble_line(log):
    """(measured %, predicted %) from a rank's log, or None when it printed
    no bubble line."""
    with open(log) as f:
        found = BUBBLE.search(f.read())
    return (float(found[1]), float(found[2])) if found else None


def tracks(path):
    """The ranks with spans in a Chrome trace (the threads of its X events)."""
    if not os.path.exists(path):
        return 0
    return len({event["tid"] for event in read_json(path)["traceEvents"]
                if event.get("ph") == "X"})


def measure(out, repeats, rows):
    results = {}
    for schedule in SCHEDULES:
        if os.path.exists(f"{out}/{schedule}.failed"):
            with open(f"{out}/{schedule}.failed") as f:
                results[schedule] = {"failed": " ".join(f.read().split())}
            continue
        runs = [f"{out}/{schedule}-r{r}" for r in range(1, repeats + 1)]
        bubbles = [bubble_line(f"{run}.rank0.log") for run in runs]
        result = {
            "step": summary([pp_step_seconds(f"{run}.jsonl", rows) for run in runs]),
            "tracks": min(tracks(f"{run}.trace.json") for run in runs),
        }
        if all(bubbles):
            result["measured"] = statistics.median(b[0] for b in bubbles)
            result["predicted"] = bubbles[0][1]
        results[schedule] = result
    return results


def met(ok):
    return "met" if ok else "MISSED"


def main():
    out, repeats = sys.argv[1], int(sys.argv[2])
    config = read_json(f"{out}/config.json")
    microbatch_size, microbatches = int(config["microbatch_size"]), int(config["microbatches"])
    rows = microbatch_size * microbatches
    load = load_averages(out)
    results = measure(out, repeats, rows)
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"{os.path.basename(config['model'])} on 2 CPU ranks, --threads 1 and "
        f"OPENBLAS_NUM_THREADS=1 each, AdamW, microbatch {microbatch_size} x "
        f"{microbatches}, {config['steps']} steps per run, every run with --trace. "
        f"Step: median over steps 2..N of a run, then median [min-max] over {repeats} "
        f"alternating runs. Bubble: pp-run's summary line, measured from the trace "
        f"(median over the runs; steps 2..N) and predicted by the schedule's "
        f"simulation; goal: within {BUBBLE_TOLERANCE:.0f} percentage points. "
        f"Tracks: ranks with spans in the trace (the fewest over the runs).",
        width=96, break_on_hyphens=False))
    one_f_one_b = results.get("1f1b", {}).get("step")
    print(f"\n{'schedule':<18}{'ms/step':>20}{'vs 1f1b':>9}{'measured':>10}"
          f"{'predicted':>11}{'goal':>8}{'tracks':>8}")
    for schedule in SCHEDULES:
        result = results[schedule]
        if "failed" in result:
            print(f"{schedule:<18}" + "\n".join(textwrap.wrap(
                f"failed: {result['failed']}", 78, break_long_words=False,
                subsequent_indent=" " * 18)))
            continue
        ratio = f"{result['step'][0] / one_f_one_b[0]:.2f}" if one_f_one_b else "-"
        if "measured" in result:
            bubble = (f"{result['measured']:>9.1f}%{result['predicted']:>10.1f}%"
                      f"{met(abs(result['measured'] - result['predicted']) <= BUBBLE_TOLERANCE):>8}")
        else:
            bubble = f"{'no bubble line from pp-run':>29}"
        print(f"{schedule:<18}{ms(result['step']):>20}{ratio:>9}{bubble}"
              f"{result['tracks']:>8}")
    zb = results.get("zb-h1", {}).get("step")
    if zb and one_f_one_b:
        print(f"\nzb-h1 / 1f1b step time: {zb[0] / one_f_one_b[0]:.2f} "
              f"(goal < 1: {met(zb[0] < one_f_one_b[0])})")


if __name__ == "__main__":
    main()

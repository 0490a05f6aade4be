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

# pp-run's summary line with --trace: "bubble: measured 23.1%, predicted
# 20.0% (1f1b, 2 ranks, 4 microbatches)".
BUBBLE = re.compile(r"^bubble: measured ([-\d.]+)%, predicted ([-\d.]+)%", re.MULTILINE)
# The goals: the measured bubble within this many percentage points of the
# predicted one (issue 12 on the byte-level GPT, issue 28 on the realistic
# models).
BUBBLE_TOLERANCE = {"byte-gpt": 10.0, "gpt2": 3.0, "llama": 3.0}


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


def measure(out, repeats, run, rows):
    """The step, bubbles and tracks of RUN (SCHEDULE-mM) over its repeats,
    or why it failed."""
    if os.path.exists(f"{out}/{run}.failed"):
        with open(f"{out}/{run}.failed") as f:
            return {"failed": " ".join(f.read().split())}
    runs = [f"{out}/{run}-r{r}" for r in range(1, repeats + 1)]
    bubbles = [bubble_line(f"{path}.rank0.log") for path in runs]
    result = {
        "step": summary([pp_step_seconds(f"{path}.jsonl", rows) for path in runs]),
        "tracks": min(tracks(f"{path}.trace.json") for path in runs),
    }
    if all(bubbles):
        result["measured"] = statistics.median(b[0] for b in bubbles)
        result["predicted"] = bubbles[0][1]
    return result


def met(ok):
    return "met" if ok else "MISSED"


def main():
    out, repeats = sys.argv[1], int(sys.argv[2])
    config = read_json(f"{out}/config.json")
    microbatch_size = int(config["microbatch_size"])
    schedules = config["schedules"].split()
    counts = [int(m) for m in config["microbatches"].split()]
    tolerance = BUBBLE_TOLERANCE[config["name"]]
    load = load_averages(out)
    results = {(schedule, m): measure(out, repeats, f"{schedule}-m{m}", microbatch_size * m)
               for schedule in schedules for m in counts}
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"{os.path.basename(config['model'])} on 2 CPU ranks, --threads 1 and "
        f"OPENBLAS_NUM_THREADS=1 each, AdamW, microbatch {microbatch_size} x m, "
        f"{config['steps']} steps per run, every run with --trace. "
        f"Step: median over steps 2..N of a run, then median [min-max] over {repeats} "
        f"alternating runs. Bubble: pp-run's summary line, measured from the trace "
        f"(median over the runs; steps 2..N) and predicted by the schedule's "
        f"simulation; goal: within {tolerance:.0f} percentage points. "
        f"Tracks: ranks with spans in the trace (the fewest over the runs).",
        width=96, break_on_hyphens=False))
    print(f"\n{'schedule':<18}{'m':>3}{'ms/step':>26}{'vs 1f1b':>9}{'measured':>10}"
          f"{'predicted':>11}{'goal':>8}{'tracks':>8}")
    for (schedule, m), result in results.items():
        if "failed" in result:
            print(f"{schedule:<18}{m:>3} " + "\n".join(textwrap.wrap(
                f"failed: {result['failed']}", 78, break_long_words=False,
                subsequent_indent=" " * 22)))
            continue
        one_f_one_b = results.get(("1f1b", m), {}).get("step")
        ratio = f"{result['step'][0] / one_f_one_b[0]:.2f}" if one_f_one_b else "-"
        if "measured" in result:
            bubble = (f"{result['measured']:>9.1f}%{result['predicted']:>10.1f}%"
                      f"{met(abs(result['measured'] - result['predicted']) <= tolerance):>8}")
        else:
            bubble = f"{'no bubble line from pp-run':>29}"
        print(f"{schedule:<18}{m:>3}{ms(result['step']):>26}{ratio:>9}{bubble}"
              f"{result['tracks']:>8}")
    for m in counts:
        zb = results.get(("zb-h1", m), {}).get("step")
        one_f_one_b = results.get(("1f1b", m), {}).get("step")
        if zb and one_f_one_b:
            print(f"\nzb-h1 / 1f1b step time at m = {m}: {zb[0] / one_f_one_b[0]:.2f} "
                  f"(goal < 1: {met(zb[0] < one_f_one_b[0])})")


if __name__ == "__main__":
    main()

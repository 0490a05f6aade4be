"""Prints the tables of `scripts/bench.sh --parallel` from the files its
runs left in DIR (see scripts/bench/parallel.sh for their names).

Usage: parallel_table.py DIR REPEATS NAME...
"""
import json
import os
import sys
import textwrap

from bench_results import (commit, load_averages, machine, ms, peak_rss_kb,
                           per_rank, pp_step_seconds, ranks_line, read_json,
                           summary)

LABELS = {"gpt": "gpt.traced.pt", "byte-gpt": "byte-gpt-v258.traced.pt"}
# The configurations parallel.sh may run (tp2-gloo with a choice of tp
# collectives only).
CONFIGS = [("1-rank", "1 rank"), ("tp2", "tp 2"), ("tp2-gloo", "tp 2, Gloo"),
           ("tp2-sp", "tp 2, sp"), ("pp2", "pp 2, 1F1B"), ("dp2", "dp 2"),
           ("pp2-sealed", "pp 2, sealed"), ("dp2-sealed", "dp 2, sealed")]
# Runs with every link's messages sealed (--link-integrity always), and the
# same runs without.
SEALED = [("pp2-sealed", "pp2"), ("dp2-sealed", "dp2")]
# The profile's op kinds that talk to other ranks: tensor parallelism's
# collectives (the sharded ones reduce over the group inside) and the
# pipeline's messages.
COMMUNICATION = ["all_reduce", "all_gather", "reduce_scatter", "sharded_gather",
                 "sharded_gather_grad", "sharded_cross_entropy",
                 "sharded_cross_entropy_grad", "send", "recv"]
# The metrics' per-rank memory fields, their columns and the columns' widths.
MEMORY = [("parameter_bytes", "parameters KB", 16),
          ("optimizer_state_bytes", "optimizer KB", 16),
          ("activation_bytes", "activations KB", 18)]


def communication(profile):
    """Rank 0's communication per step from its --profile: per op kind,
    milliseconds and calls; dp's gradient all-reduce from its totals."""
    steps = profile["steps"]
    stage = profile["stages"][0]
    ops = stage["ops"]
    parts = [f"{kind} {ops[kind]['seconds'] / steps * 1e3:.2f} "
             f"({ops[kind]['calls'] // steps})" for kind in COMMUNICATION if kind in ops]
    if stage["dp_reduce_seconds"] > 0:
        parts.append(f"dp all-reduce {stage['dp_reduce_seconds'] / steps * 1e3:.2f}, "
                     f"waited {stage['dp_reduce_wait_seconds'] / steps * 1e3:.2f}")
    return ", ".join(parts) or "none"


def measure(out, name, repeats):
    base = f"{out}/{name}"
    config = read_json(f"{base}/config.json")
    rows = int(config["microbatch_size"]) * 8
    result = {"label": LABELS[name], "rows": rows, "configs": {}}
    for key, _ in CONFIGS:
        if os.path.exists(f"{base}/{key}.failed"):
            with open(f"{base}/{key}.failed") as f:
                result["configs"][key] = {"failed": f.read().strip()}
            continue
        if not os.path.exists(f"{base}/{key}-r1.jsonl"):
            continue  # not run here
        runs = [f"{base}/{key}-r{r}" for r in range(1, repeats + 1)]
        ranks = ranks_line(f"{runs[0]}.jsonl")
        result["configs"][key] = {
            "step": summary([pp_step_seconds(f"{run}.jsonl", rows) for run in runs]),
            "memory": {field: [rank[field] for rank in ranks] for field, _, _ in MEMORY},
            "rss": [max(peak_rss_kb(f"{run}.rank{k}.rss") for run in runs)
                    for k in range(len(ranks))],
            "communication": communication(read_json(f"{base}/{key}-profile.json")),
        }
    return result


def print_model(model):
    configs = model["configs"]
    one = configs["1-rank"]["step"][0]
    print(f"\n{model['label']}, {model['rows']} samples per step")
    print(f"{'run':<12}{'ms/step':>22}{'vs 1 rank':>10}  rank 0's communication, "
          "ms/step (calls/step)")
    for key, label in CONFIGS:
        config = configs.get(key, {})
        if "failed" in config:
            print(f"{label:<12}  " + "\n              ".join(textwrap.wrap(
                f"does not compile: {config['failed']}", 82, break_long_words=False)))
            continue
        if "step" not in config:
            continue
        print(f"{label:<12}{ms(config['step']):>22}{config['step'][0] / one:>10.2f}  "
              + ("\n" + " " * 46).join(textwrap.wrap(config["communication"], 50)))
    costs = [f"{configs[sealed]['step'][0] / configs[plain]['step'][0]:.3f}x "
             f"{plain.replace('2', ' 2')}'s step time"
             for sealed, plain in SEALED
             if "step" in configs.get(sealed, {}) and "step" in configs.get(plain, {})]
    if costs:
        print("sealed links (HMAC-SHA256 per message): " + ", ".join(costs))
    print(f"\n{'per rank':<12}"
          + "".join(f"{column:>{width}}" for _, column, width in MEMORY)
          + f"{'peak RSS MB':>14}")
    for key, label in CONFIGS:
        config = configs.get(key, {})
        if "step" not in config:
            continue
        memory = config["memory"]
        print(f"{label:<12}"
              + "".join(f"{per_rank(memory[field], 1024, 1):>{width}}"
                        for field, _, width in MEMORY)
              + f"{per_rank(config['rss'], 1024, 0):>14}")


def main():
    out, repeats, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    load = load_averages(out)
    with open(f"{out}/tp-collectives") as f:
        collectives = f.read().strip()
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"2 ranks (1 for the reference), --threads 1 and OPENBLAS_NUM_THREADS=1 each, "
        f"AdamW, the same global batch: microbatch 16 x 8 (dp 2: 16 x 4 per replica). "
        f"tp collectives: {collectives}. "
        f"Step: median over steps 2..N of a run, then median [min-max] over {repeats} "
        f"alternating runs. Communication: rank 0's --profile of one more run, over "
        f"all its steps. Per rank: rank 0 / rank 1 (the metrics' ranks line; "
        f"activations: saved bytes per microbatch x microbatches in flight); peak RSS: "
        f"the largest over the runs (/usr/bin/time).", width=96, break_on_hyphens=False))
    for name in names:
        print_model(measure(out, name, repeats))


if __name__ == "__main__":
    main()

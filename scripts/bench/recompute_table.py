"""Prints the tables of `scripts/bench.sh --recompute` from the files its
runs left in DIR (see scripts/bench/recompute.sh for their names).

Usage: recompute_table.py DIR REPEATS NAME...
"""
import sys
import textwrap

from bench_results import (commit, load_averages, machine, ms, per_rank,
                           pp_step_seconds, ranks_line, read_json, summary)

LABELS = {"byte-gpt": "byte-gpt.traced.pt", "mlp": "the MLP"}
POLICIES = ("none", "selective", "full")
# The goal: selective's step within 15% of none's.
SELECTIVE_GOAL = 1.15


def measure(out, name, repeats):
    base = f"{out}/{name}"
    config = read_json(f"{base}/config.json")
    rows = int(config["microbatch_size"]) * int(config["microbatches"])
    result = {"label": LABELS[name], "rows": rows,
              "split_points": config["split_points"], "policies": {}}
    for policy in POLICIES:
        runs = [f"{base}/{policy}-r{r}" for r in range(1, repeats + 1)]
        ranks = ranks_line(f"{runs[0]}.jsonl")
        result["policies"][policy] = {
            "step": summary([pp_step_seconds(f"{run}.jsonl", rows) for run in runs]),
            "activations": [rank["measured_activation_bytes"] for rank in ranks],
            "predicted": [rank["activation_bytes"] for rank in ranks],
            "peak": [rank["measured_peak_bytes"] for rank in ranks],
        }
    return result


def shares(values, baseline):
    return " / ".join(f"{v / b:.2f}" for v, b in zip(values, baseline))


def print_model(model):
    policies = model["policies"]
    none = policies["none"]
    print(f"\n{model['label']}, {model['rows']} samples per step, cut at "
          f"{model['split_points']}")
    print(f"{'policy':<11}{'ms/step':>22}{'vs none':>9}{'activations KB':>27}"
          f"{'vs none':>27}{'peak KB':>10}")
    for policy in POLICIES:
        figures = policies[policy]
        print(f"{policy:<11}{ms(figures['step']):>22}"
              f"{figures['step'][0] / none['step'][0]:>9.2f}"
              f"{per_rank(figures['activations'], 1024, 0):>27}"
              f"{shares(figures['activations'], none['activations']):>27}"
              f"{max(figures['peak']) / 1024:>10.0f}")
    ratio = policies["selective"]["step"][0] / none["step"][0]
    verdict = "met" if ratio <= SELECTIVE_GOAL else "MISSED"
    print(f"selective / none step time: {ratio:.2f} "
          f"(goal <= {SELECTIVE_GOAL:.2f}: {verdict})")
    for policy in POLICIES[1:]:
        share = max(policies[policy]["activations"]) / max(none["activations"])
        print(f"{policy}: the largest rank's activations are {share:.0%} of none's")
    mismatched = [policy for policy in POLICIES
                  if policies[policy]["predicted"] != policies[policy]["activations"]]
    if mismatched:
        print("predicted activation_bytes differ from the measured ones for "
              + ", ".join(mismatched))


def main():
    out, repeats, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    load = load_averages(out)
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"--recompute none, selective and full, 4 stages x 8 microbatches (1F1B) on 4 "
        f"CPU ranks, the same cuts for every policy, --threads 1 and "
        f"OPENBLAS_NUM_THREADS=1 per rank, AdamW, one GEMM engine cache for every run. "
        f"Step: median over steps 2..N of a run, then median [min-max] over {repeats} "
        f"alternating runs (none, selective, full, none, ...). Activations: the "
        f"metrics' measured_activation_bytes per rank (rank 0 / 1 / 2 / 3; the "
        f"prediction, activation_bytes, is checked equal), and their share of none's; "
        f"peak: the largest rank's measured_peak_bytes (its resident parameter, gradient and "
        f"optimizer state pages and saved values).",
        width=96, break_on_hyphens=False))
    for name in names:
        print_model(measure(out, name, repeats))


if __name__ == "__main__":
    main()

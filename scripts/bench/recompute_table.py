"""Prints the tables of `scripts/bench.sh --recompute` from the files its
runs left in DIR (see scripts/bench/recompute.sh for their names).

Usage: recompute_table.py DIR REPEATS NAME...
"""
import glob
import re
import sys
import textwrap

from bench_results import (commit, load_averages, machine, ms, per_rank,
                           pp_step_seconds, ranks_line, read_json, summary)

LABELS = {"byte-gpt": "byte-gpt.traced.pt", "mlp": "the MLP"}
POLICIES = ("none", "offload", "selective", "full")
# The goal: selective's step within 15% of none's.
SELECTIVE_GOAL = 1.15
# auto and full under the model's --memory-limit, each cut by the
# partitioner (recompute.sh's policies auto-limit and full-limit).
LIMITED = ("auto-limit", "full-limit")


def stage_plan(package_dir):
    """Per stage of the package compiled into PACKAGE_DIR: its recompute
    choice and its last node (the cut after it)."""
    manifest = read_json(glob.glob(f"{package_dir}/*/manifest.json")[0])
    return [(stage.get("recompute", "none"), stage["last_node"])
            for stage in manifest["stage_costs"]]


def measure(out, name, repeats):
    base = f"{out}/{name}"
    config = read_json(f"{base}/config.json")
    rows = int(config["microbatch_size"]) * int(config["microbatches"])
    limit = config.get("memory_limit")
    result = {"label": LABELS[name], "rows": rows,
              "split_points": config["split_points"], "policies": {},
              "limit": int(limit) if limit else None}
    for policy in POLICIES + (LIMITED if limit else ()):
        runs = [f"{base}/{policy}-r{r}" for r in range(1, repeats + 1)]
        ranks = ranks_line(f"{runs[0]}.jsonl")
        result["policies"][policy] = {
            "step": summary([pp_step_seconds(f"{run}.jsonl", rows) for run in runs]),
            "activations": [rank["measured_activation_bytes"] for rank in ranks],
            "predicted": [rank["activation_bytes"] for rank in ranks],
            "peak": [rank["measured_peak_bytes"] for rank in ranks],
            "plan": stage_plan(f"{base}/{policy}"),
        }
    if limit:
        with open(f"{base}/none-limit.err") as f:
            found = re.search(r"smallest achievable peak is (\d+) bytes", f.read())
        result["none_floor"] = found.group(1) if found else "?"
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
    if model["limit"]:
        print_limited(model)
    mismatched = [policy for policy in policies
                  if policies[policy]["predicted"] != policies[policy]["activations"]]
    if mismatched:
        print("predicted activation_bytes differ from the measured ones for "
              + ", ".join(mismatched))


def print_limited(model):
    """auto against full under the model's memory limit."""
    policies, limit = model["policies"], model["limit"]
    print(f"\nunder --memory-limit {limit} bytes per rank (none's smallest peak at "
          f"any cut: {model['none_floor']} bytes), each policy cut by the partitioner")
    print(f"{'policy':<11}{'ms/step':>22}{'vs full':>9}{'activations KB':>27}"
          f"{'peak KB':>10}  per stage: recompute (last node)")
    full = policies["full-limit"]
    for policy in LIMITED:
        figures = policies[policy]
        plan = ", ".join(f"{choice} ({last})" for choice, last in figures["plan"])
        print(f"{policy.removesuffix('-limit'):<11}{ms(figures['step']):>22}"
              f"{figures['step'][0] / full['step'][0]:>9.2f}"
              f"{per_rank(figures['activations'], 1024, 0):>27}"
              f"{max(figures['peak']) / 1024:>10.0f}  {plan}")
    auto = policies["auto-limit"]
    print(f"auto / full step time at the limit: "
          f"{auto['step'][0] / full['step'][0]:.2f}")
    for policy in LIMITED:
        peak = max(policies[policy]["peak"])
        verdict = "within" if peak <= limit else "OVER"
        print(f"{policy.removesuffix('-limit')}: the largest rank's measured peak is "
              f"{peak} bytes, {verdict} the limit")


def main():
    out, repeats, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    load = load_averages(out)
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"--recompute none, selective and full, and none with --offload-activations "
        f"(offload), 4 stages x 8 microbatches (1F1B) on 4 "
        f"CPU ranks, the same cuts for every policy (on the GPT also auto and full "
        f"under a --memory-limit, cut by the partitioner), --threads 1 and "
        f"OPENBLAS_NUM_THREADS=1 per rank, AdamW, one GEMM engine cache for every run. "
        f"Step: median over steps 2..N of a run, then median [min-max] over {repeats} "
        f"alternating runs (none, offload, selective, full[, auto and full at the "
        f"limit], "
        f"none, ...). Activations: the "
        f"metrics' measured_activation_bytes per rank (rank 0 / 1 / 2 / 3; the "
        f"prediction, activation_bytes, is checked equal), and their share of none's; "
        f"peak: the largest rank's measured_peak_bytes (its resident parameter, gradient and "
        f"optimizer state pages and saved values).",
        width=96, break_on_hyphens=False))
    for name in names:
        print_model(measure(out, name, repeats))


if __name__ == "__main__":
    main()

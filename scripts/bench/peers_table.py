"""Prints the tables of `scripts/bench.sh --peers` from the files its runs
left in DIR (see scripts/bench/peers.sh for their names).

Usage: peers_table.py DIR REPEATS NAME...
"""
import json
import os
import platform
import statistics
import subprocess
import sys

import torch

LABELS = {"mlp": "MLP {width} wide", "gpt": "GPT (gpt.traced.pt)",
          "byte-gpt": "byte GPT (byte-gpt.traced.pt)"}
# The goals for pp / peer step time, by model kind and run.
STEP_GOALS = {("mlp", "s1"): 1.0, ("gpt", "s1"): 0.8, ("gpt", "s2-1f1b"): 0.8}
GEMM_SHARE_GOAL, RSS_GOAL = 0.8, 0.5
RUNS = [("s1", "1 stage", "eager"), ("s2-1f1b", "2 ranks 1F1B", "pipelining 1F1B"),
        ("s2-gpipe", "2 ranks GPipe", "pipelining GPipe")]


def read_json(path):
    with open(path) as f:
        return json.load(f)


def pp_step_seconds(path, rows):
    """Median step seconds of a pp run over steps 2..N (step 1 warms up)."""
    with open(path) as f:
        rates = [r["samples_per_s"] for r in map(json.loads, f) if "step" in r]
    return statistics.median(rows / rate for rate in rates[1:])


def peer_step_seconds(paths):
    """Median over steps 2..N of a peer run's step, the slowest rank's."""
    ranks = [read_json(p)["step_seconds"] for p in paths]
    return statistics.median(max(step) for step in list(zip(*ranks))[1:])


def summary(values):
    return statistics.median(values), min(values), max(values)


def ms(stats):
    mid, low, high = stats
    return f"{mid * 1e3:9.1f} [{low * 1e3:.1f}-{high * 1e3:.1f}]"


def goal_text(ratio, goal, at_most=True):
    if goal is None:
        return ""
    met = ratio <= goal if at_most else ratio >= goal
    return f"{'<=' if at_most else '>='} {goal:.2f} {'met' if met else 'MISSED'}"


def best_sgemm(path):
    """The best 1024^3 single-thread rate of the JSON lines in `path`, and
    which engine gave it: any key with "gflop" in its name is the rate."""
    best = (0.0, "none")
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            record = json.loads(line)
            if any(record.get(k, 1024) != 1024 for k in ("m", "n", "k")):
                continue
            rates = [v for k, v in record.items()
                     if "gflop" in k.lower() and isinstance(v, (int, float))]
            engine = record.get("engine", "?")
            if rates and max(rates) > best[0]:
                best = (max(rates), engine)
    return best


def matmul_seconds(profile):
    """Seconds in matmul kernels of a profile's stage 0, and their kinds."""
    ops = read_json(profile)["stages"][0]["ops"]
    kinds = sorted(k for k in ops if "matmul" in k or "gemm" in k)
    return sum(ops[k]["seconds"] for k in kinds), kinds


def machine():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def commit():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True,
                              text=True).stdout.strip()
    dirty = " (with uncommitted changes)" if git("status", "--porcelain",
                                                  "--untracked-files=no") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


def main():
    out, repeats, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    threads = open(f"{out}/pp-threads").read().strip()
    best, engine = best_sgemm(f"{out}/sgemm.jsonl")
    load = [open(f"{out}/load-{w}").read().split("load average:")[1].strip()
            for w in ("before", "after")]
    print(f"\npp {commit()} against PyTorch {torch.__version__}; {machine()}")
    print(f"load average before {load[0]}, after {load[1]}")
    print(f"one thread per rank (pp: {threads}; PyTorch: torch.set_num_threads(1)); step: median over steps 2..N of a run (the "
          f"slowest rank's step for PyTorch), then median [min-max] over "
          f"{repeats} alternating runs")

    rows_out, bubbles, gemm, memory = [], [], [], []
    for name in names:
        config = read_json(f"{out}/{name}/config.json")
        family = "mlp" if name == "mlp" else "gpt"
        label = LABELS[name].format(width=config["width"])
        m = int(config["microbatches"])
        rows = int(config["microbatch_size"]) * m
        shape = f"{config['microbatch_size']} x {m}"
        base = f"{out}/{name}"
        pp, peer, rss = {}, {}, {}
        for run, _, _ in RUNS:
            ranks = 1 if run == "s1" else 2
            pp[run] = summary([pp_step_seconds(f"{base}/pp-{run}-r{r}.jsonl", rows)
                               for r in range(1, repeats + 1)])
            peer[run] = summary([peer_step_seconds(
                [f"{base}/peer-{run}-r{r}.rank{k}.json" for k in range(ranks)])
                for r in range(1, repeats + 1)])
            rss[run] = (
                [max(int(open(f"{base}/pp-{run}-r{r}.rank{k}.rss").read().split()[-1])
                     for r in range(1, repeats + 1)) for k in range(ranks)],
                [max(read_json(f"{base}/peer-{run}-r{r}.rank{k}.json")["max_rss_kb"]
                     for r in range(1, repeats + 1)) for k in range(ranks)],
                min(read_json(f"{base}/peer-{run}-r{r}.rank{k}.json")["import_rss_kb"]
                    for r in range(1, repeats + 1) for k in range(ranks)))
        for run, pp_label, peer_label in RUNS:
            ratio = pp[run][0] / peer[run][0]
            rows_out.append(f"{label if run == 's1' else shape if run == 's2-1f1b' else '':<30}"
                            f"{pp_label:<15}{ms(pp[run]):>26}  {peer_label:<17}"
                            f"{ms(peer[run]):>26}{ratio:>8.2f}  "
                            f"{goal_text(ratio, STEP_GOALS.get((family, run)))}")
            pp_rss, peer_rss, peer_import = rss[run]
            rss_ratio = max(pp_rss) / max(peer_rss)
            memory.append(f"{label if run == 's1' else '':<30}{pp_label:<15}"
                          f"{' / '.join(f'{k / 1024:.0f}' for k in pp_rss):>14}"
                          f"{' / '.join(f'{k / 1024:.0f}' for k in peer_rss):>16}"
                          f"{peer_import / 1024:>11.0f}{rss_ratio:>8.2f}  "
                          f"{goal_text(rss_ratio, RSS_GOAL)}")
        ideal = 1 / (m + 1)
        for run, pp_label, peer_label in RUNS[1:]:
            bubble = lambda steps: 1 - steps["s1"][0] / (2 * steps[run][0])
            bubbles.append(f"{label if run == 's2-1f1b' else '':<30}{pp_label[8:]:<8}"
                           f"{bubble(pp):>9.1%}{bubble(peer):>9.1%}{ideal:>9.1%}")
        flops = read_json(f"{base}/peer-s1-r1.rank0.json")["matmul_flops_per_step"]
        first, kinds = matmul_seconds(f"{base}/profile-first.json")
        total, _ = matmul_seconds(f"{base}/profile-all.json")
        per_step = (total - first) / (int(config["steps"]) - 1)
        rate = flops / per_step / 1e9
        gemm.append(f"{label:<30}{flops / 1e9:>10.2f}{per_step * 1e3:>12.1f}{rate:>10.1f}"
                    f"{rate / best:>8.0%}  {goal_text(rate / best, GEMM_SHARE_GOAL, False)}"
                    f"  ({'+'.join(kinds)})")

    print(f"\n{'model (microbatch x count)':<30}{'pp':<15}{'pp ms/step':>26}  {'PyTorch':<17}"
          f"{'PyTorch ms/step':>26}{'pp/peer':>8}  goal")
    print("\n".join(rows_out))
    print(f"\nbubble at 2 ranks: 1 - T1 / (2 T2), T1 the 1-stage (eager) step; "
          f"ideal (p-1)/(m+p-1)")
    print(f"{'model':<30}{'':<8}{'pp':>9}{'PyTorch':>9}{'ideal':>9}")
    print("\n".join(bubbles))
    print(f"\npp's GEMM rate at 1 stage: the step's matmul FLOPs (forward and "
          f"backward, counted by PyTorch's FlopCounterMode) / pp's matmul seconds\n"
          f"per step (--profile, steps 2..N); share of the best 1024^3 "
          f"single-thread SGEMM, {best:.1f} GFLOP/s ({engine})")
    print(f"{'model':<30}{'GFLOP/step':>10}{'matmul ms':>12}{'GFLOP/s':>10}{'share':>8}  goal")
    print("\n".join(gemm))
    print(f"\npeak RSS in MB per rank (rank 0 / rank 1; max over runs); PyTorch's "
          f"own after `import torch` alone: 'import'")
    print(f"{'model':<30}{'run':<15}{'pp':>14}{'PyTorch':>16}{'import':>11}"
          f"{'pp/peer':>8}  goal")
    print("\n".join(memory))


if __name__ == "__main__":
    main()

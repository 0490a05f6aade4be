"""Prints the tables of `scripts/bench.sh --peers` from the files its runs
left in DIR (see scripts/bench/peers.sh for their names).

Usage: peers_table.py DIR REPEATS NAME...
"""
import json
import os
import statistics
import sys
import textwrap

import torch

from bench_results import (commit, load_averages, machine, ms, peak_rss_kb,
                           pp_step_seconds, ranks_line, read_json, summary)
from schedules_table import bubble_line

LABELS = {"mlp": "MLP {width} wide", "gpt": "gpt.traced.pt",
          "byte-gpt": "byte-gpt.traced.pt", "gpt2": "GPT-2-shaped 67M",
          "llama": "LLaMA-shaped 111M"}
FAMILIES = {"mlp": "mlp", "gpt": "gpt", "byte-gpt": "gpt", "gpt2": "hf", "llama": "hf"}
# The goals for pp / peer step time (issues 9 and 28), by family and run.
STEP_GOALS = {("mlp", "s1"): 1.0, ("gpt", "s1"): 0.8, ("gpt", "s2-1f1b"): 0.8,
              ("hf", "s1"): 0.5, ("hf", "s2-1f1b"): 0.5, ("hf", "s2-1f1b-flops"): 0.6}
GEMM_SHARE_GOAL = 0.8
RSS_GOALS = {"mlp": 0.5, "gpt": 0.5, "hf": 0.6}
# Issue 28's compile goals for the realistic models: at most these seconds
# and this many times the parameter bytes of peak memory.
COMPILE_GOALS = {"hf": (10.0, 2.0)}
# The runs peers.sh may make (a model's config.json names its own) and
# their labels; a pp run's file, where it is another run's.
RUN_LABELS = {"s1": "1 stage", "s1-t2": "1 stage, 2 threads",
              "s2-1f1b": "2 ranks 1F1B", "s2-1f1b-flops": "2 ranks 1F1B, FLOPs",
              "s2-gpipe": "2 ranks GPipe"}
PP_RUN = {"s2-1f1b-flops": "s2-1f1b"}
# The parts of a step in pp-run --profile's breakdown (docs/tools/pp-run.md).
BREAKDOWN_PARTS = ["gemm", "attention", "other_kernels", "communication", "waiting",
                   "optimizer", "rest"]


def peer_step_seconds(ranks):
    """Median over steps 2..N of a peer run's step, the slowest rank's,
    from each rank's record."""
    ranks = [rank["step_seconds"] for rank in ranks]
    return statistics.median(max(step) for step in list(zip(*ranks))[1:])


def goal_text(ratio, goal, at_most=True):
    if goal is None:
        return ""
    met = ratio <= goal if at_most else ratio >= goal
    return f"{'<=' if at_most else '>='} {goal:.2f} {'met' if met else 'MISSED'}"


def best_sgemm(path):
    """The best 1024^3 rate ("gflops") of the JSON lines in `path`
    (pp-gemm-rate's format), and which engine gave it."""
    best = (0.0, "none")
    with open(path) as f:
        for record in (json.loads(line) for line in f if line.startswith("{")):
            if record.get("shape") == "1024x1024x1024" and record["gflops"] > best[0]:
                best = (record["gflops"], record["engine"])
    return best


def matmul_seconds(profile):
    """Seconds in matmul kernels of a profile's stage 0 (the op kinds
    naming matmul, gemm or linear, which a fused kind may too, and
    nn.attention's, whose GEMMs PyTorch's FLOP count includes: its softmax
    counts too, a few percent of its time), and those kinds."""
    ops = read_json(profile)["stages"][0]["ops"]
    words = ("matmul", "gemm", "linear", "attention")
    kinds = sorted(k for k in ops if any(w in k for w in words))
    return sum(ops[k]["seconds"] for k in kinds), kinds


def breakdown_shares(profile, first=None):
    """Per rank of a --profile file's JSON, each part's share of its step
    time (the ranks' breakdowns); given the profile of a run of the first
    step alone, the shares of steps 2..N, so that the warm-up drops out."""
    shares = []
    for at, entry in enumerate(profile["stages"]):
        seconds = dict(entry["breakdown"]["seconds"])
        step = entry["breakdown"]["step_seconds"]
        if first is not None:
            warmup = first["stages"][at]["breakdown"]
            seconds = {part: s - warmup["seconds"][part] for part, s in seconds.items()}
            step -= warmup["step_seconds"]
        shares.append({part: seconds[part] / step for part in BREAKDOWN_PARTS})
    return shares


def trace_bubble(base, run, repeats):
    """(measured %, predicted %) of pp's 2-rank runs from rank 0's bubble
    line (median of the measured), or None without one."""
    bubbles = [bubble_line(f"{base}/pp-{run}-r{r}.rank0.log")
               for r in range(1, repeats + 1)]
    if not all(bubbles):
        return None
    return statistics.median(b[0] for b in bubbles), bubbles[0][1]


def compile_cost(base, stages):
    """(seconds, peak RSS KB) of pp-run's compile at STAGES, as
    `/usr/bin/time -f "%e %M"` wrote them."""
    with open(f"{base}/compile-s{stages}.time") as f:
        seconds, kb = f.read().split()[-2:]
    return float(seconds), int(kb)


def measure(out, name, repeats):
    """The measurements of one model: step-time stats, peak RSS, bubbles,
    compile cost and the GEMM rate."""
    base = f"{out}/{name}"
    config = read_json(f"{base}/config.json")
    m = int(config["microbatches"])
    rows = int(config["microbatch_size"]) * m
    runs = range(1, repeats + 1)
    result = {"name": name, "m": m, "steps": {}, "rss": {}, "bubbles": {},
              "runs": config.get("runs", "s1 s2-1f1b s2-gpipe").split(),
              "label": LABELS[name].format(width=config["width"]),
              "shape": f"{config['microbatch_size']} x {m}",
              "compile": [compile_cost(base, stages) for stages in (1, 2)],
              "parameter_bytes": sum(rank["parameter_bytes"] for rank in
                                     ranks_line(f"{base}/pp-s1-r1.jsonl"))}
    for run in result["runs"]:
        ranks = range(1 if run.startswith("s1") else 2)
        pp_run = PP_RUN.get(run, run)
        peer_runs = [[read_json(f"{base}/peer-{run}-r{r}.rank{k}.json") for k in ranks]
                     for r in runs]
        result["steps"][run] = (
            summary([pp_step_seconds(f"{base}/pp-{pp_run}-r{r}.jsonl", rows) for r in runs]),
            summary([peer_step_seconds(ranks_of_run) for ranks_of_run in peer_runs]))
        result["rss"][run] = (
            [max(peak_rss_kb(f"{base}/pp-{pp_run}-r{r}.rank{k}.rss") for r in runs)
             for k in ranks],
            [max(run_ranks[k]["max_rss_kb"] for run_ranks in peer_runs) for k in ranks],
            min(rank["import_rss_kb"] for run_ranks in peer_runs for rank in run_ranks))
        if run.startswith("s2") and os.path.exists(f"{base}/pp-{pp_run}-r1.trace.json"):
            result["bubbles"][run] = trace_bubble(base, pp_run, repeats)
    result["flops"] = read_json(
        f"{base}/peer-s1-r1.rank0.json")["matmul_flops_per_step"]
    first, result["kinds"] = matmul_seconds(f"{base}/profile-first.json")
    total, _ = matmul_seconds(f"{base}/profile-all.json")
    result["matmul_seconds"] = (total - first) / (int(config["steps"]) - 1)
    result["gemm_rate"] = result["flops"] / result["matmul_seconds"]
    result["breakdown"] = breakdown_shares(read_json(f"{base}/profile-all.json"),
                                           read_json(f"{base}/profile-first.json"))[0]
    return result


def first_column(model, row):
    return [model["label"], model["shape"]][row] if row < 2 else ""


def print_steps(models):
    print(f"\n{'model, microbatch x m':<24}{'run':<22}{'pp ms/step':>26}"
          f"{'PyTorch ms/step':>26}{'ratio':>7}  goal")
    for model in models:
        family = FAMILIES[model["name"]]
        for row, run in enumerate(model["runs"]):
            pp, peer = model["steps"][run]
            ratio = pp[0] / peer[0]
            print(f"{first_column(model, row):<24}{RUN_LABELS[run]:<22}{ms(pp):>26}"
                  f"{ms(peer):>26}{ratio:>7.2f}  {goal_text(ratio, STEP_GOALS.get((family, run)))}")


def print_bubbles(models):
    print(f"\n{'bubble at 2 ranks':<24}{'run':<22}{'pp':>8}{'traced':>8}{'predicted':>10}"
          f"{'PyTorch':>9}{'ideal':>8}")
    for model in models:
        steps = model["steps"]
        runs = [run for run in model["runs"] if run.startswith("s2")]
        for row, run in enumerate(runs):
            bubble = [1 - steps["s1"][side][0] / (2 * steps[run][side][0])
                      for side in (0, 1)]
            traced = model["bubbles"].get(run)
            traced = (f"{traced[0]:>7.1f}%{traced[1]:>9.1f}%" if traced
                      else f"{'-':>8}{'-':>10}")
            print(f"{first_column(model, row):<24}{RUN_LABELS[run]:<22}{bubble[0]:>8.1%}"
                  f"{traced}{bubble[1]:>9.1%}{1 / (model['m'] + 1):>8.1%}")


def print_gemm(models, best):
    print(f"\n{'pp GEMM rate, 1 stage':<24}{'GFLOP/step':>11}{'matmul ms':>11}"
          f"{'GFLOP/s':>9}{'share':>7}  goal")
    for model in models:
        share = model["gemm_rate"] / 1e9 / best
        print(f"{model['label']:<24}{model['flops'] / 1e9:>11.2f}"
              f"{model['matmul_seconds'] * 1e3:>11.1f}{model['gemm_rate'] / 1e9:>9.1f}"
              f"{share:>7.0%}  {goal_text(share, GEMM_SHARE_GOAL, at_most=False)}")


def print_breakdown(models):
    print(f"\n{'pp step, 1 stage, %':<24}"
          + "".join(f"{part:>{len(part) + 2}}" for part in BREAKDOWN_PARTS))
    for model in models:
        print(f"{model['label']:<24}" + "".join(
            f"{100 * model['breakdown'][part]:>{len(part) + 2}.1f}"
            for part in BREAKDOWN_PARTS))


def print_rss(models):
    print(f"\n{'peak RSS, MB':<24}{'run':<22}{'pp':>12}{'PyTorch':>14}{'import':>8}"
          f"{'ratio':>7}  goal")
    for model in models:
        for row, run in enumerate(model["runs"]):
            pp, peer, imported = model["rss"][run]
            ratio = max(pp) / max(peer)
            print(f"{first_column(model, row):<24}{RUN_LABELS[run]:<22}"
                  f"{' / '.join(f'{kb / 1024:.0f}' for kb in pp):>12}"
                  f"{' / '.join(f'{kb / 1024:.0f}' for kb in peer):>14}"
                  f"{imported / 1024:>8.0f}{ratio:>7.2f}  "
                  f"{goal_text(ratio, RSS_GOALS[FAMILIES[model['name']]])}")


def print_compile(models):
    print(f"\n{'pp compile':<24}{'stages':>7}{'seconds':>9}{'peak MB':>9}"
          f"{'x params':>10}  goals")
    for model in models:
        goals = COMPILE_GOALS.get(FAMILIES[model["name"]], (None, None))
        for row, (seconds, kb) in enumerate(model["compile"]):
            times = kb * 1024 / model["parameter_bytes"]
            print(f"{model['label'] if row == 0 else '':<24}{row + 1:>7}{seconds:>9.1f}"
                  f"{kb / 1024:>9.0f}{times:>10.1f}  {goal_text(seconds, goals[0])}"
                  f"{'; ' if goals[0] else ''}{goal_text(times, goals[1])}")


def main():
    out, repeats, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    threads = open(f"{out}/pp-threads").read().strip()
    best, engine = best_sgemm(f"{out}/sgemm.jsonl")
    load = load_averages(out)
    models = [measure(out, name, repeats) for name in names]
    print("\n" + textwrap.fill(
        f"pp {commit()} against PyTorch {torch.__version__}, {machine()}, load average "
        f"before {load[0]}, after {load[1]}. One thread per rank (pp: {threads}; "
        f"PyTorch: torch.set_num_threads(1)), but 2 in the 2-thread runs (pp: "
        f"--threads 2; PyTorch: torch.set_num_threads(2)). PyTorch runs eager at 1 "
        f"stage, torch.distributed.pipelining (gloo) at 2 ranks, cut at the middle "
        f"layer or, in the FLOPs runs, where the stages' matmul FLOPs balance best; pp "
        f"cuts where its partitioner does (the FLOPs row repeats its 1F1B runs). Step: "
        f"median over steps 2..N of a run (PyTorch: the slowest rank's), then median "
        f"[min-max] over {repeats} alternating runs; ratio: pp / PyTorch.",
        width=96, break_on_hyphens=False))
    print_steps(models)
    print("\nBubble: 1 - T1 / (2 T2), T1 the 1-stage step, T2 the 2-rank step; traced "
          "and predicted: pp-run's\nbubble line with --trace (median over the runs); ideal "
          "(p-1)/(m+p-1).")
    print_bubbles(models)
    print("\nGEMM rate: a step's matmul FLOPs (forwards and backwards, PyTorch's "
          "FlopCounterMode) over pp's\nmatmul (and fused attention's) seconds per step (--profile, "
          f"steps 2..N; kinds {', '.join(sorted(set(k for m in models for k in m['kinds'])))})"
          f"; share: of the best\nsingle-thread 1024^3 SGEMM, {best:.1f} GFLOP/s ({engine}).")
    print_gemm(models, best)
    print("\nWhere pp's step goes: --profile's breakdown of steps 2..N at 1 stage, as a "
          "share of the step\n(docs/tools/pp-run.md, \"Breakdown\").")
    print_breakdown(models)
    print("\nPeak RSS per rank (rank 0 / rank 1), the largest over the runs; import: "
          "a PyTorch process's after its imports.")
    print_rss(models)
    print("\nCompile: pp-run's compile of the model (--print-schedule), seconds and peak "
          "RSS (/usr/bin/time);\nx params: peak RSS over the model's parameter bytes.")
    print_compile(models)


if __name__ == "__main__":
    main()

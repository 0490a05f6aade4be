"""Prints the tables of `scripts/bench.sh --precision` from the files its
runs left in DIR (see scripts/bench/precision.sh for their names).

Usage: precision_table.py DIR REPEATS NAME...
"""
import json
import math
import re
import sys
import textwrap

from bench_results import (commit, load_averages, machine, ms, peak_rss_kb,
                           per_rank, pp_step_seconds, ranks_line, read_json,
                           summary)

LABELS = {"byte-gpt": "byte-gpt.traced.pt", "mlp": "the MLP"}
CONFIGS = [(f"{precision}-s{stages}", f"{precision}, {stages} stage" + "s" * (stages > 1))
           for stages in (1, 2) for precision in ("f32", "bf16")]
MATMUL_TYPES = re.compile(
    r":\s*\((tensor<[^>]*>),\s*(tensor<[^>]*>)\)\s*->\s*(tensor<[^>]*>)")


def dims(tensor_type):
    return [int(d) for d in tensor_type[len("tensor<"):-1].split("x")[:-1]]


def matmul_flops(path):
    """2 x C's elements x k summed over the nn.matmul ops of the forward and
    backward functions of a pp-compile'd program: one microbatch's FLOPs."""
    flops, phase = 0, None
    with open(path) as f:
        for line in f:
            function = re.match(r"\s*func\.func @\w+_(forward|backward|eval)\(", line)
            if function:
                phase = function.group(1)
            elif "nn.matmul" in line and phase in ("forward", "backward"):
                lhs, _, result = (dims(t) for t in MATMUL_TYPES.search(line).groups())
                k = lhs[-2] if "transpose_lhs" in line else lhs[-1]
                flops += 2 * math.prod(result) * k
    return flops


def best_rate(out, dtype):
    """The largest gflops of pp-gemm-rate --dtype DTYPE before and after the
    runs, and its engine."""
    records = [json.loads(line) for when in ("before", "after")
               for line in open(f"{out}/rate-{dtype}-{when}.jsonl")]
    best = max(records, key=lambda r: r["gflops"])
    return best["gflops"] * 1e9, best["engine"], best["shape"]


def measure(out, name, repeats):
    base = f"{out}/{name}"
    config = read_json(f"{base}/config.json")
    microbatches = int(config["microbatches"])
    rows = int(config["microbatch_size"]) * microbatches
    result = {"label": LABELS[name], "rows": rows, "configs": {},
              "flops": matmul_flops(f"{base}/program.mlir") * microbatches}
    for key, _ in CONFIGS:
        runs = [f"{base}/{key}-r{r}" for r in range(1, repeats + 1)]
        ranks = ranks_line(f"{runs[0]}.jsonl")
        result["configs"][key] = {
            "step": summary([pp_step_seconds(f"{run}.jsonl", rows) for run in runs]),
            "activations": [rank["activation_bytes"] for rank in ranks],
            "rss": [max(peak_rss_kb(f"{run}.rank{k}.rss") for run in runs)
                    for k in range(len(ranks))],
        }
        if key.endswith("-s1"):
            profile = read_json(f"{base}/{key}-profile.json")
            matmul = profile["stages"][0]["ops"]["matmul"]
            result["configs"][key]["matmul_seconds"] = matmul["seconds"] / profile["steps"]
    return result


def print_model(model, best):
    configs = model["configs"]
    print(f"\n{model['label']}, {model['rows']} samples per step")
    print(f"{'run':<18}{'ms/step':>22}{'vs f32':>8}{'activations KB':>20}{'peak RSS MB':>14}"
          f"{'RSS vs f32':>12}")
    for key, label in CONFIGS:
        config = configs[key]
        f32 = configs[key.replace("bf16", "f32")]
        print(f"{label:<18}{ms(config['step']):>22}"
              f"{config['step'][0] / f32['step'][0]:>8.2f}"
              f"{per_rank(config['activations'], 1024, 0):>20}"
              f"{per_rank(config['rss'], 1024, 0):>14}"
              f"{max(config['rss']) / max(f32['rss']):>12.2f}")
    print(f"\nmatmul, 1 stage: {model['flops'] / 1e9:.3f} GFLOP per step")
    print(f"{'precision':<12}{'ms/step':>10}{'GFLOP/s':>10}{'of best':>10}")
    for precision in ("f32", "bf16"):
        seconds = configs[f"{precision}-s1"]["matmul_seconds"]
        rate = model["flops"] / seconds
        print(f"{precision:<12}{seconds * 1e3:>10.2f}{rate / 1e9:>10.1f}"
              f"{rate / best[precision][0]:>10.1%}")


def main():
    out, repeats, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    load = load_averages(out)
    best = {dtype: best_rate(out, dtype) for dtype in ("f32", "bf16")}
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"--precision f32 against bf16, 1 stage and 2 stages (1F1B), --threads 1 and "
        f"OPENBLAS_NUM_THREADS=1 per rank, AdamW, 8 microbatches per step, one GEMM "
        f"engine cache for every run. Step: median over steps 2..N of a run, then "
        f"median [min-max] over {repeats} alternating runs. Activations: the metrics' "
        f"activation_bytes per rank (rank 0 / rank 1); peak RSS: the largest over the "
        f"runs (/usr/bin/time). Matmul: the forward and backward nn.matmul FLOPs of the "
        f"compiled program over the matmul seconds of a --profile run, against this "
        f"CPU's best single-thread GEMM of the type (pp-gemm-rate --dtype, largest "
        f"over engines before and after the runs): "
        + "; ".join(f"{dtype} {rate / 1e9:.1f} GFLOP/s ({engine}, {shape})"
                    for dtype, (rate, engine, shape) in best.items()) + ".",
        width=96, break_on_hyphens=False))
    for name in names:
        print_model(measure(out, name, repeats), best)


if __name__ == "__main__":
    main()

"""Prints the table of `scripts/bench.sh --attention` from the files its
runs left in DIR (see scripts/bench/attention.sh for their names).

Usage: attention_table.py DIR REPEATS NAME...
"""
import sys
import textwrap

from bench_results import (commit, load_averages, machine, ms, peak_rss_kb,
                           pp_step_seconds, ranks_line, read_json, summary)

LABELS = {"byte-gpt": "byte-gpt.traced.pt", "gpt2": "GPT-2-shaped 67M",
          "llama": "LLaMA-shaped 111M"}
CONFIGS = [("fuse-true", "fused (nn.attention)"), ("fuse-false", "unfused ops")]


def measure(out, name, repeats):
    base = f"{out}/{name}"
    config = read_json(f"{base}/config.json")
    rows = int(config["microbatch_size"]) * int(config["microbatches"])
    result = {"label": LABELS[name], "rows": rows, "configs": {}}
    for key, _ in CONFIGS:
        runs = [f"{base}/{key}-r{r}" for r in range(1, repeats + 1)]
        breakdown = read_json(f"{base}/{key}-profile.json")["stages"][0]["breakdown"]
        result["configs"][key] = {
            "step": summary([pp_step_seconds(f"{run}.jsonl", rows) for run in runs]),
            "attention": breakdown["share"]["attention"],
            "activations": ranks_line(f"{runs[0]}.jsonl")[0]["activation_bytes"],
            "rss": max(peak_rss_kb(f"{run}.rank0.rss") for run in runs),
        }
    return result


def print_model(model):
    configs = model["configs"]
    unfused = configs["fuse-false"]
    print(f"\n{model['label']}, 1 stage, {model['rows']} samples per step")
    print(f"{'run':<22}{'ms/step':>26}{'vs unfused':>12}{'attention':>11}"
          f"{'activations MB':>16}{'peak RSS MB':>13}")
    for key, label in CONFIGS:
        config = configs[key]
        print(f"{label:<22}{ms(config['step']):>26}"
              f"{config['step'][0] / unfused['step'][0]:>12.2f}"
              f"{config['attention']:>11.1%}"
              f"{config['activations'] / 2**20:>16.2f}"
              f"{config['rss'] / 1024:>13.0f}")


def main():
    out, repeats, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    load = load_averages(out)
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"Attention fused into nn.attention (pp-compile fuse-attention=true) against "
        f"its separate ops (fuse-attention=false; both train to the same bits, "
        f"test/E2E/fused-attention.test), no recomputation, 1 stage, "
        f"--threads 1 and OPENBLAS_NUM_THREADS=1, AdamW, 4 microbatches per step, one "
        f"GEMM engine cache for every run. Step: median over steps 2..N of a run, then "
        f"median [min-max] over {repeats} alternating runs. Attention: its share of "
        f"the step in a --profile run's breakdown. Activations: the metrics' "
        f"activation_bytes (what the forward saves for the backward); peak RSS: the "
        f"largest over the runs (/usr/bin/time).",
        width=96, break_on_hyphens=False))
    for name in names:
        print_model(measure(out, name, repeats))


if __name__ == "__main__":
    main()

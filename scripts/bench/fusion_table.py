"""Prints the table of `scripts/bench.sh --attention` or `--cross-entropy`
from the files its runs left in DIR (see scripts/bench/fusion.sh for their
names).

Usage: fusion_table.py KIND DIR REPEATS NAME...   (KIND: attention or
cross-entropy)
"""
import sys
import textwrap

from bench_results import (commit, load_averages, machine, ms, peak_rss_kb,
                           pp_step_seconds, ranks_line, read_json, summary)

LABELS = {"byte-gpt": "byte-gpt.traced.pt", "gpt2": "GPT-2-shaped 67M",
          "llama": "LLaMA-shaped 111M"}
# Per kind: the breakdown share shown, and (key, label, the key of the run
# its step is compared with) per configuration, as fusion.sh names them.
# Per kind: the breakdown share shown, its column's title, the first
# column's width and the ratio column's title.
COLUMNS = {"attention": ("attention", 22, "vs unfused"),
           "cross-entropy": ("GEMM", 26, "vs separate")}
KINDS = {
    "attention": ("attention", [
        ("fuse-true", "fused (nn.attention)", "fuse-false"),
        ("fuse-false", "unfused ops", "fuse-false")]),
    "cross-entropy": ("gemm", [
        ("none-fused", "fused, no recompute", "none-separate"),
        ("none-separate", "separate, no recompute", "none-separate"),
        ("full-fused", "fused, recompute full", "full-separate"),
        ("full-separate", "separate, recompute full", "full-separate")]),
}
DESCRIPTIONS = {
    "attention": "Attention fused into nn.attention (pp-compile "
                 "fuse-attention=true) against its separate ops "
                 "(fuse-attention=false; both train to the same bits, "
                 "test/E2E/fused-attention.test), no recomputation",
    "cross-entropy": "The LM head's matmul and its cross-entropy fused into "
                     "nn.linear_cross_entropy (pp-compile "
                     "fuse-cross-entropy=true, the logits a sequence at a "
                     "time, recomputed by the gradient) against the separate "
                     "ops (fuse-cross-entropy=false), without recomputation "
                     "and under recompute=full; the same losses, the head "
                     "weight's gradient summed a sequence at a time "
                     "(test/E2E/fused-cross-entropy.test)",
}


def measure(kind, out, name, repeats):
    base = f"{out}/{name}"
    config = read_json(f"{base}/config.json")
    rows = int(config["microbatch_size"]) * int(config["microbatches"])
    share = KINDS[kind][0]
    result = {"label": LABELS[name], "rows": rows, "configs": {}}
    for key, _, _ in KINDS[kind][1]:
        runs = [f"{base}/{key}-r{r}" for r in range(1, repeats + 1)]
        breakdown = read_json(f"{base}/{key}-profile.json")["stages"][0]["breakdown"]
        result["configs"][key] = {
            "step": summary([pp_step_seconds(f"{run}.jsonl", rows) for run in runs]),
            "share": breakdown["share"][share],
            "activations": ranks_line(f"{runs[0]}.jsonl")[0]["activation_bytes"],
            "rss": max(peak_rss_kb(f"{run}.rank0.rss") for run in runs),
        }
    return result


def print_model(kind, model):
    configs = model["configs"]
    title, width, ratio = COLUMNS[kind]
    print(f"\n{model['label']}, 1 stage, {model['rows']} samples per step")
    print(f"{'run':<{width}}{'ms/step':>26}{ratio:>12}{title:>11}"
          f"{'activations MB':>16}{'peak RSS MB':>13}")
    for key, label, baseline in KINDS[kind][1]:
        config = configs[key]
        print(f"{label:<{width}}{ms(config['step']):>26}"
              f"{config['step'][0] / configs[baseline]['step'][0]:>12.2f}"
              f"{config['share']:>11.1%}"
              f"{config['activations'] / 2**20:>16.2f}"
              f"{config['rss'] / 1024:>13.0f}")


def main():
    kind, out, repeats, names = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                 sys.argv[4:])
    load = load_averages(out)
    print("\n" + textwrap.fill(
        f"pp {commit()}, {machine()}, load average before {load[0]}, after {load[1]}. "
        f"{DESCRIPTIONS[kind]}, 1 stage, "
        f"--threads 1 and OPENBLAS_NUM_THREADS=1, AdamW, 4 microbatches per step, one "
        f"GEMM engine cache for every run. Step: median over steps 2..N of a run, then "
        f"median [min-max] over {repeats} alternating runs. {COLUMNS[kind][0][0].upper() + COLUMNS[kind][0][1:]}: its share of "
        f"the step in a --profile run's breakdown. Activations: the metrics' "
        f"activation_bytes (what the forward saves for the backward); peak RSS: the "
        f"largest over the runs (/usr/bin/time).",
        width=96, break_on_hyphens=False))
    for name in names:
        print_model(kind, measure(kind, out, name, repeats))


if __name__ == "__main__":
    main()

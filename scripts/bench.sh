#!/usr/bin/env bash
# Throughput of pp against LibTorch on the same model, data and optimizer,
# measured in one run (ratios, since machines are noisy). The model is the
# bundled MLP made WIDTH wide (default 1024). Each pp rank and LibTorch use
# one thread. The last column is the 1F1B/GPipe ideal for p stages and m
# microbatches, m / (m + p - 1) of p times one stage's throughput, when each
# rank has a core of its own.
# Usage: scripts/bench.sh [WIDTH] (after scripts/build.sh)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"
width="${1:-1024}"
out="$build/bench"
mkdir -p "$out"
model="$out/mlp6-w$width.onnx"
[ -f "$model" ] || /usr/bin/python3 "$root/test/models/make_mlp6.py" "$model" --width "$width"

batch=64 microbatches=8 steps=6
common=(--microbatch-size "$batch" --loss mse:y --microbatches "$microbatches"
        --steps "$steps" --seed 1 --optimizer adamw --lr 0.001)

OPENBLAS_NUM_THREADS=1 "$build/bin/pp-torch-reference" "$model" "${common[@]}" --torch-threads 1 \
  --metrics "$out/torch.jsonl" > /dev/null
runs=(torch)
for stages in 1 2 3; do
  for schedule in 1f1b gpipe; do
    [ "$stages" = 1 ] && [ "$schedule" = gpipe ] && continue
    "$build/bin/pp-run" "$model" "${common[@]}" --cache-dir "$out/cache" \
      --stages "$stages" --schedule "$schedule" \
      --metrics "$out/pp-$stages-$schedule.jsonl" > /dev/null
    runs+=("pp-$stages-$schedule")
  done
done

/usr/bin/python3 - "$out" "$microbatches" "$(nproc)" "${runs[@]}" <<'PY'
import json, statistics, sys
out, m, cores, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def rate(run):
    with open(f"{out}/{run}.jsonl") as f:
        steps = [r["samples_per_s"] for r in map(json.loads, f) if "step" in r]
    return statistics.median(steps[1:])  # the first step warms up
torch = rate("torch")
one = rate("pp-1-1f1b")
print(f"{cores} cores; median samples/s over steps 2..N\n")
print(f"{'run':<16}{'samples/s':>12}{'vs LibTorch':>14}{'vs ideal':>10}")
for run in runs:
    r = rate(run)
    ideal = ""
    if run != "torch":
        p = int(run.split("-")[1])
        ideal = f"{r / (one * p * m / (m + p - 1)):>10.2f}"
    print(f"{run:<16}{r:>12.1f}{r / torch:>14.2f}{ideal}")
PY

#!/usr/bin/env bash
# The README's main command: sets up, builds, then trains the bundled model
# (test/models/mlp6.onnx: two inputs, two outputs, a skip connection) as a
# 3-stage pipeline on three CPU rank processes with the 1F1B schedule, and
# repeats it unpipelined to show that both end with the same parameters.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
"$root/scripts/build.sh"

run() {
  "$build/bin/pp-run" "$root/test/models/mlp6.onnx" --cache-dir "$build/pp-cache" \
    --microbatch-size 4 --loss mse:y --microbatches 4 --steps 10 \
    --data synthetic --seed 0 --optimizer adamw --lr 0.003 "$@"
}

echo "== 3 stages, 3 rank processes, 1F1B =="
run --stages 3 --schedule 1f1b
echo "== 1 stage (unpipelined) =="
run --stages 1 --schedule gpipe | tail -n 1

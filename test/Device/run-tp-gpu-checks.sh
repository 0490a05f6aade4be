#!/usr/bin/env bash
# Tensor parallelism on GPU ranks (issue 13, item 7), for a machine with a
# GPU (the `device` tool's H200): the GPT fixture at tp 2, tp 2 with
# sequence parallelism, and pp 2 x tp 2 with --device cuda (the collectives
# over NCCL, CudaShardedKernels.cpp) against the same runs on CPU ranks:
# losses and gradient norms within 1e-4 relative, first-step gradients
# within 1e-4; and tp 2 on the GPU twice gives the same bits. With fewer
# GPUs than ranks the ranks share GPUs (LOCAL_RANK modulo the devices) and
# NCCL connects them through host memory (CudaBackend.cpp).
# Usage: test/Device/run-tp-gpu-checks.sh [BUILD_DIR]   (after scripts/build.sh)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
out="$(mktemp -d)"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

model="$root/test/models/gpt.traced.pt"
common=(--cache-dir "$out/cache" --input-shape tokens=?x8xi64
        --microbatch-size 2 --microbatches 4 --steps 3 --seed 11
        --loss cross_entropy:output_0 --optimizer adamw --lr 0.001
        --clip-grad-norm 0.5)
run() { # NAME DEVICE PP-RUN-OPTIONS...
  local name="$1" device="$2"
  shift 2
  echo "== $name on $device"
  "$build/bin/pp-run" "$model" "${common[@]}" --device "$device" "$@" \
    --save-grads "$out/$device-$name.grads" \
    --metrics "$out/$device-$name.jsonl" | tail -n 1
}
for config in "tp2:--stages 1 --tp 2" "tp2-sp:--stages 1 --tp 2 --sp" \
              "pp2-tp2:--stages 2 --tp 2"; do
  name="${config%%:*}"
  read -ra options <<< "${config#*:}"
  run "$name" cpu "${options[@]}"
  run "$name" cuda "${options[@]}"
  /usr/bin/python3 "$root/test/E2E/compare_runs.py" --rtol 1e-4 \
    "$out/cpu-$name.jsonl" "$out/cuda-$name.jsonl"
  /usr/bin/python3 "$root/test/E2E/compare_gradients.py" \
    "$out/cuda-$name.grads" "$out/cpu-$name.grads"
done
run tp2-again cuda --stages 1 --tp 2
/usr/bin/python3 "$root/test/E2E/compare_runs.py" "$out/cuda-tp2.jsonl" \
  "$out/cuda-tp2-again.jsonl"
echo "tensor-parallel GPU checks passed"

#!/usr/bin/env bash
# The checks that need a GPU, for a machine with one (the `device` tool's
# H200): the CUDA device of the device layer (pool buffers, streams, events,
# device-tagged tensors, kernels on a frame's own stream), cuBLAS GEMM
# against OpenBLAS, the CUDA math, reduction, normalization, attention and
# fused cross-entropy
# kernels against the CPU ones, the compute kernels on bf16 and f16 tensors
# against their f32 results rounded (the same bits; matmul within an ulp),
# the dropout kernel and the training-state kernels
# (gradient sums, clip, norm, SGD and AdamW steps) against the CPU's (the
# same bits), then the bundled model trained on GPU ranks (CUDA kernels,
# NCCL between ranks) with 1, 2 and 3 stages under gpipe and 1f1b, on 2
# ranks under every schedule (interleaved-1f1b and zb-v with two stages per
# rank, whose messages go to non-neighbours in both directions: a link per
# message stream, CudaBackend.cpp), and pp2 x dp2 at ZeRO levels 0-2 under
# 1f1b, zb-h1, interleaved-1f1b and zb-v. GPU runs must agree bit for bit
# with each other (every schedule gives one stage's bits, as on CPU ranks:
# schedules.test, zero-levels.test); against the CPU run the first-step
# loss must agree to float32 rounding; the first step's gradients must
# agree with LibTorch's within 1e-4, --profile must write a well-formed
# profile, and a step may copy between host and GPU only the data and the
# step's scalars (host_device_bytes_per_step, bound below). Last, the
# tensor-parallel checks (run-tp-gpu-checks.sh: tp 2 and pp 2 x tp 2).
# All ranks share the one GPU (LOCAL_RANK modulo the devices; NCCL then
# connects them through host memory). Each section prints the seconds so
# far.
# Usage: test/Device/run-gpu-checks.sh [BUILD_DIR]   (after scripts/build.sh)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
out="$(mktemp -d)"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

"$build/test/Device/PPCudaDeviceCheck"
"$build/test/Device/PPCudaGemmCheck"
"$build/test/Device/PPCudaMathKernelsCheck"
"$build/test/Device/PPCudaFloatTypesCheck"
"$build/test/Device/PPCudaDropoutCheck"
"$build/test/Device/PPCudaStateKernelsCheck"
"$build/test/Device/PPCudaAttentionCheck"
"$build/test/Device/PPCudaLinearCrossEntropyCheck"
echo "== kernel checks done (${SECONDS}s)"

model="$root/test/models/mlp6.onnx"
base=(--cache-dir "$out/cache" --microbatch-size 4 --loss mse:y --steps 5
      --data synthetic --seed 7)
common=("${base[@]}" --microbatches 4)
# One GPU: every rank uses it (LOCAL_RANK modulo the visible devices).
for s in 1 2 3; do
  for k in gpipe 1f1b; do
    "$build/bin/pp-run" "$model" "${common[@]}" --stages "$s" --schedule "$k" \
      --device cuda --metrics "$out/gpu-$s-$k.jsonl" | tail -n 1
  done
done
/usr/bin/python3 "$root/test/E2E/compare_runs.py" "$out"/gpu-*.jsonl
echo "== stage counts done (${SECONDS}s)"

# Activation offload on GPU ranks: 3 stages x 8 microbatches under 1f1b,
# stage 0 (three in flight) offloads to host memory over its copy stream;
# the same bits, and what host memory held is the prediction.
for offload in "" --offload-activations; do
  "$build/bin/pp-run" "$model" "${base[@]}" --microbatches 8 --stages 3 \
    --device cuda $offload --metrics "$out/offload$offload.jsonl" | tail -n 1
done
/usr/bin/python3 "$root/test/E2E/compare_runs.py" "$out"/offload*.jsonl
/usr/bin/python3 "$root/test/E2E/check_offloaded_activations.py" \
  "$out/offload.jsonl" "$out/offload--offload-activations.jsonl"
echo "== activation offload done (${SECONDS}s)"

# Every schedule on 2 GPU ranks gives the one-stage run's bits
# (schedule_matrix.py, as schedules.test on CPU ranks): interleaved-1f1b and
# zb-v run two stages per rank, so rank 1 sends to rank 0 both forwards and
# input gradients, interleaved.
/usr/bin/python3 "$root/test/E2E/schedule_matrix.py" "$build/bin/pp-run" \
  "$out" --ranks 2 --microbatches 4 -- "$model" "${base[@]}" --device cuda \
  | tee "$out/schedules.txt"
[ "$(grep -c ' same ' "$out/schedules.txt")" = 5 ] ||
  { echo "a schedule on GPU ranks did not give one stage's bits"; exit 1; }
echo "== schedules done (${SECONDS}s)"

# Dropout on GPU ranks: the same masks at every stage count and schedule.
for s in 1 2 3; do
  "$build/bin/pp-opt" "$root/test/E2E/Inputs/dropout-mlp.mlir" -o /dev/null \
    --pp-compile="stages=$s microbatch-size=4 loss=mse:y" \
    --pp-emit="$out/dropout-$s" 2> /dev/null
  for k in gpipe 1f1b; do
    "$build/bin/pp-run" "$out/dropout-$s" --device cuda --schedule "$k" \
      --microbatches 4 --steps 3 --seed 5 \
      --metrics "$out/dropout-gpu-$s-$k.jsonl" | tail -n 1
  done
done
/usr/bin/python3 "$root/test/E2E/compare_runs.py" "$out"/dropout-gpu-*.jsonl

# ZeRO levels on GPU ranks (pp2 x dp2 on the one GPU): --zero 1 and 2 give
# --zero 0's bits under 1f1b and zb-h1 alike, and under interleaved-1f1b and
# zb-v their own schedule's --zero 0 bits (as zero-levels.test on CPU
# ranks). --zero 3 is refused on GPUs: memory outside a share cannot be
# released there yet.
zero_run() { # NAME PP-RUN-OPTIONS...
  local name="$1"
  shift
  "$build/bin/pp-run" "$model" "${common[@]}" --stages 2 --dp 2 \
    --device cuda --optimizer adamw --clip-grad-norm 1.0 "$@" \
    --metrics "$out/$name.jsonl" | tail -n 1
}
for z in 0 1 2; do
  for k in 1f1b zb-h1; do
    zero_run "zero-gpu-$k-$z" --schedule "$k" --zero "$z"
  done
  for k in interleaved-1f1b zb-v; do
    zero_run "zero-virtual-$k-$z" --schedule "$k" --virtual-stages 2 \
      --zero "$z"
  done
done
/usr/bin/python3 "$root/test/E2E/compare_runs.py" "$out"/zero-gpu-*.jsonl
for k in interleaved-1f1b zb-v; do
  /usr/bin/python3 "$root/test/E2E/compare_runs.py" \
    "$out"/zero-virtual-$k-*.jsonl
done
echo "== ZeRO levels done (${SECONDS}s)"

# What a step copies between host and GPU per rank (host_device_bytes_per_step,
# every copy the device's queues make): at most the data (every input and
# label of the step's microbatches, as if one rank held them all) and the
# step's scalars: the loss scale (4 bytes), the loss sum (8 there and 8
# back), and per parameter tensor, one more for a share's cut, at most
# 64 bytes: the gradient norm's range (24) and its sum of squares (8), and
# the optimizer's segment (32). The parameters, gradients and optimizer
# state stay on the GPU: copying any of them would break the bound.
/usr/bin/python3 - "$out/cache" "$out"/zero-*.jsonl <<'PY'
import glob, json, os, sys
SIZES = {"f32": 4, "f64": 8, "i64": 8, "i32": 4, "bf16": 2, "f16": 2}
def nbytes(tensor):
    count = 1
    for extent in tensor["shape"]:
        count *= extent
    return count * SIZES[tensor["dtype"]]
manifest = next(m for m in (json.load(open(p)) for p in
                            glob.glob(os.path.join(sys.argv[1], "*", "manifest.json")))
                if m["num_stages"] == 2 and len(set(m["stage_ranks"])) == 2)
microbatches = 4
data = microbatches * (sum(nbytes(t) for t in manifest["inputs"]) +
                       nbytes(manifest["labels"]))
bound = data + 4 + 16 + 64 * (len(manifest["parameters"]) + 1)
print(f"bound: {bound} host-device bytes per step per rank ({data} of data)")
failed = False
for path in sys.argv[2:]:
    ranks = next(json.loads(l)["ranks"] for l in open(path) if '"ranks"' in l)
    for rank in ranks:
        moved = rank["host_device_bytes_per_step"]
        if not 0 < moved <= bound:
            print(f"{os.path.basename(path)}: rank {rank['rank']} copies "
                  f"{moved} bytes per step")
            failed = True
print("host-device bytes: " + ("OVER THE BOUND" if failed else "within the bound"))
sys.exit(1 if failed else 0)
PY
# Each package's CUDA stage library was built once, on its first use, into
# the cache (packages carry only stages.cu).
ls "$out/cache/stage-libraries" | grep -c '\.json$'

"$build/bin/pp-run" "$model" "${common[@]}" --stages 1 --metrics "$out/cpu.jsonl" \
  > /dev/null
/usr/bin/python3 - "$out/cpu.jsonl" "$out/gpu-3-1f1b.jsonl" <<'PY'
import json, sys
cpu, gpu = (json.loads(open(p).readline())["loss"] for p in sys.argv[1:])
print(f"first-step loss: cpu {cpu:.8g} gpu {gpu:.8g}")
sys.exit(0 if abs(cpu - gpu) <= 1e-5 * abs(cpu) else 1)
PY

# The first step's gradients on GPU ranks against LibTorch (before clipping,
# gathered from 3 stages), and a GPU profile (each bracket waits for the GPU).
"$build/bin/pp-run" "$model" "${common[@]}" --stages 3 --device cuda \
  --clip-grad-norm 0.1 --save-grads "$out/gpu.grads" \
  --profile "$out/gpu-profile.json" > /dev/null
"$build/bin/pp-torch-reference" "$model" --microbatch-size 4 --loss mse:y \
  --microbatches 4 --seed 7 --save-grads "$out/torch.grads" > /dev/null
/usr/bin/python3 "$root/test/E2E/compare_gradients.py" "$out/gpu.grads" \
  "$out/torch.grads"
/usr/bin/python3 "$root/test/E2E/check_profile.py" "$out/gpu-profile.json"
echo "== gradients and profile done (${SECONDS}s)"

"$root/test/Device/run-tp-gpu-checks.sh" "$build"
echo "GPU checks passed (${SECONDS}s)"

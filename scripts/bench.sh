#!/usr/bin/env bash
# Throughput of pp against LibTorch and PyTorch on the same model, data and
# optimizer, measured in one run (ratios, since machines are noisy). Each pp
# rank and each peer use one thread. Three sections (docs/development.md,
# Benchmarks):
#
# mlp: the bundled MLP made WIDTH wide (default 1024) at 1 to 3 stages. The
#   last column is the 1F1B/GPipe ideal for p stages and m microbatches,
#   m / (m + p - 1) of p times one stage's throughput, when each rank has a
#   core of its own.
# torchscript: a TorchScript model on 1 stage, pp-run against LibTorch
#   training the same module (pp-torch-reference), runs alternating; prints
#   the ratio of step times and pp's seconds per op kind (pp-run --profile).
#   The model is the bundled GPT (test/models/gpt.traced.pt) when present,
#   else the tiny LM of test/E2E/make_tiny_lm.py; PP_BENCH_MODEL,
#   PP_BENCH_LOSS and PP_BENCH_INPUTS (NAME=TYPE ..., pp-run's
#   --input-shape) choose another.
# peers (--peers): pp against PyTorch 2.x (scripts/bench/peer.py) on the
#   WIDTH-wide MLP, the bundled GPT and the bundled byte-level GPT: 1 stage
#   against eager PyTorch, 2 ranks against torch.distributed.pipelining
#   (GPipe and 1F1B), runs alternating; step times, pp/peer ratios with the
#   goals, pipeline bubbles, pp's GEMM rate against the machine's best
#   SGEMM, each rank's peak RSS and pp's compile time and memory. Opt-in
#   (a step takes seconds): "gpt2" and "llama", Hugging Face GPT-2- and
#   LLaMA-shaped models (scripts/bench/hf_models.py exports them into
#   build/bench/hf-models), also with 2 threads at 1 stage and against a
#   FLOP-balanced torch pipelining split. PyTorch 2.x comes from a virtual
#   environment, $PP_BENCH_VENV (default build/bench-venv; made with pip
#   install torch numpy onnx when missing, about 5 GB; transformers,
#   onnxscript and safetensors added for gpt2 and llama);
#   PP_BENCH_PEER_MODELS (default "mlp gpt byte-gpt"; any of these and
#   gpt2 llama) and PP_BENCH_REPEATS (default 3) choose what runs.
# parallel (--parallel): tensor, pipeline and data parallelism on 2 CPU
#   ranks, one thread each, against 1 rank at the same global batch, on the
#   bundled GPT and the byte-level GPT (its vocabulary padded to 258 so that
#   tp 2 splits it): tp 2, tp 2 with --sp, pp 2 (1F1B) and dp 2, runs
#   alternating; step times, each rank's parameter, optimizer state and
#   activation bytes (the metrics' `ranks` line) and peak RSS, and rank 0's
#   communication per step (--profile). PP_BENCH_PARALLEL_MODELS (default
#   "gpt byte-gpt") and PP_BENCH_REPEATS (default 3) choose what runs.
# schedules (--schedules): every pipeline schedule (gpipe, 1f1b,
#   interleaved-1f1b, zb-h1, zb-v) on 2 CPU ranks, one thread each, on the
#   bundled byte-level GPT, runs alternating with --trace: step times, the bubble
#   measured from the trace and the predicted one, and the trace's tracks.
#   PP_BENCH_REPEATS (default 3) runs of each; PP_BENCH_SCHEDULES_MODEL
#   (byte-gpt, or gpt2 or llama as --peers exports them),
#   PP_BENCH_SCHEDULES (default all five) and PP_BENCH_SCHEDULES_MICROBATCHES
#   (default 4; e.g. "4 8") choose what runs.
# precision (--precision): bf16 against f32 (pp-run --precision) on the
#   bundled byte-level GPT and the WIDTH-wide MLP, at 1 stage and 2 stages
#   (1F1B), one thread per rank, runs alternating: step times and their
#   ratio, each rank's activation bytes (the metrics' ranks line) and peak
#   RSS, and the matmul rate of each precision (the compiled program's
#   matmul FLOPs over --profile's matmul seconds) as a share of this CPU's
#   best single-thread GEMM of the type (pp-gemm-rate --dtype f32|bf16).
#   PP_BENCH_REPEATS (default 3) runs of each.
# recompute (--recompute): activation recomputation (pp-run --recompute
#   none|selective|full) on the bundled byte-level GPT (packed text) and the
#   WIDTH-wide MLP, 4 stages x 8 microbatches (1F1B) cut at the same points
#   for every policy, one thread per rank, runs alternating: step times and
#   their ratio to none's (selective's goal: within 15%), and each rank's
#   measured activation bytes (the metrics' ranks line) and their ratio to
#   none's; on the GPT also auto and full under one --memory-limit that no
#   cut meets without recomputation, each cut by the partitioner: their
#   step times, ratio and peaks. PP_BENCH_REPEATS (default 3) runs of each.
# attention (--attention): fused attention (nn.attention, pp-fuse-attention)
#   against its unfused ops (pp-compile fuse-attention=false) at 1 stage, one
#   thread, runs alternating, on the bundled byte-level GPT and the models
#   PP_BENCH_ATTENTION_MODELS names (default "byte-gpt"; gpt2 and llama as
#   --peers exports them): step times and their ratio, attention's share of
#   the step, activation bytes and peak RSS. PP_BENCH_REPEATS (default 3).
# cross-entropy (--cross-entropy): the fused LM head and loss
#   (nn.linear_cross_entropy, pp-fuse-cross-entropy) against the separate
#   ops (pp-compile fuse-cross-entropy=false), without recomputation and
#   under --recompute full, the same way, on the models
#   PP_BENCH_CROSS_ENTROPY_MODELS names (default "byte-gpt"): step times and
#   their ratio, the GEMMs' share of the step, activation bytes and peak RSS.
# Usage: scripts/bench.sh [WIDTH] [mlp|torchscript|all|peers|--peers|parallel|--parallel|schedules|--schedules|precision|--precision|recompute|--recompute|attention|--attention|cross-entropy|--cross-entropy]
# (after scripts/build.sh; default all, which is mlp and torchscript)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"
width=1024
section=all
for arg in "$@"; do
  case "$arg" in
    mlp|torchscript|all|peers|parallel|schedules|precision|recompute|attention|cross-entropy) section="$arg" ;;
    --peers|--parallel|--schedules|--precision|--recompute|--attention|--cross-entropy) section="${arg#--}" ;;
    *[!0-9]*|"")
      echo "bench.sh: unknown argument '$arg'; give a WIDTH and one of mlp," \
           "torchscript, all, --peers, --parallel, --schedules, --precision," \
           "--recompute, --attention or --cross-entropy" >&2
      exit 2 ;;
    *) width="$arg" ;;
  esac
done
out="$build/bench"
mkdir -p "$out"

bench_mlp() {
  local model="$out/mlp6-w$width.onnx"
  [ -f "$model" ] || /usr/bin/python3 "$root/test/models/make_mlp6.py" "$model" --width "$width"

  local batch=64 microbatches=8 steps=6 stages schedule
  local common=(--microbatch-size "$batch" --loss mse:y --microbatches "$microbatches"
                --steps "$steps" --seed 1 --optimizer adamw --lr 0.001)

  OPENBLAS_NUM_THREADS=1 "$build/bin/pp-torch-reference" "$model" "${common[@]}" --torch-threads 1 \
    --metrics "$out/torch.jsonl" > /dev/null
  local runs=(torch)
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
}

bench_torchscript() {
  local model loss inputs
  if [ -n "${PP_BENCH_MODEL:-}" ]; then
    model="$PP_BENCH_MODEL" loss="${PP_BENCH_LOSS:?set PP_BENCH_LOSS too}"
    inputs="${PP_BENCH_INPUTS:-}"
  elif [ -f "$root/test/models/gpt.traced.pt" ]; then
    model="$root/test/models/gpt.traced.pt" loss=cross_entropy:output_0
    inputs="tokens=?x8xi64"
  else
    model="$out/tiny_lm.traced.pt" loss=cross_entropy:output_0
    inputs="tokens=?x5xi64 features=?x3xf32"
    [ -f "$model" ] || /usr/bin/python3 "$root/test/E2E/make_tiny_lm.py" "$out"
  fi
  local shapes=() input
  for input in $inputs; do shapes+=(--input-shape "$input"); done
  local batch=16 microbatches=4 steps=20 repeats=3
  local common=("$model" --microbatch-size "$batch" --loss "$loss"
                --microbatches "$microbatches" --steps "$steps" --seed 1
                --optimizer adamw --lr 0.001 "${shapes[@]}")
  local runs=() r
  for r in $(seq "$repeats"); do
    OPENBLAS_NUM_THREADS=1 "$build/bin/pp-torch-reference" "${common[@]}" \
      --torch-threads 1 --metrics "$out/ts-torch-$r.jsonl" > /dev/null
    "$build/bin/pp-run" "${common[@]}" --cache-dir "$out/cache" \
      --metrics "$out/ts-pp-$r.jsonl" > /dev/null
    runs+=("$r")
  done
  # The profile comes from a run of its own: its brackets cost a little.
  "$build/bin/pp-run" "${common[@]}" --cache-dir "$out/cache" \
    --profile "$out/ts-profile.json" > /dev/null
  /usr/bin/python3 - "$out" "$model" "$((batch * microbatches))" "${runs[@]}" <<'PY'
import json, statistics, sys
out, model, samples, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
# A run's step: the median over steps 4..N (LibTorch's TorchScript executor
# profiles and optimizes the graph in its first runs).
def step_seconds(path):
    with open(path) as f:
        rates = [r["samples_per_s"] for r in map(json.loads, f) if "step" in r]
    return statistics.median(samples / rate for rate in rates[3:])
torch = statistics.median(step_seconds(f"{out}/ts-torch-{r}.jsonl") for r in runs)
pp = statistics.median(step_seconds(f"{out}/ts-pp-{r}.jsonl") for r in runs)
print(f"\n{model}: 1 stage, {samples} samples per step, one thread each, "
      f"median step over steps 4..N of {len(runs)} alternating runs")
print(f"{'LibTorch':<12}{torch * 1e3:>10.3f} ms/step")
print(f"{'pp':<12}{pp * 1e3:>10.3f} ms/step")
print(f"pp / LibTorch step time: {pp / torch:.2f}")
with open(f"{out}/ts-profile.json") as f:
    profile = json.load(f)
steps = profile["steps"]
stage = profile["stages"][0]
print(f"\npp's time per op kind (--profile, ms per step; kernels "
      f"{stage['op_seconds'] / profile['step_seconds']:.0%} of the step)")
print(f"{'op':<24}{'calls':>8}{'ms/step':>10}{'share':>8}")
for kind, t in sorted(stage["ops"].items(), key=lambda kv: -kv[1]["seconds"]):
    print(f"{kind:<24}{t['calls'] // steps:>8}{t['seconds'] / steps * 1e3:>10.3f}"
          f"{t['seconds'] / stage['op_seconds']:>8.1%}")
PY
}

case "$section" in
  mlp) bench_mlp ;;
  torchscript) bench_torchscript ;;
  all) bench_mlp; bench_torchscript ;;
  peers) . "$root/scripts/bench/ranks.sh"; . "$root/scripts/bench/peers.sh"; bench_peers ;;
  parallel) . "$root/scripts/bench/ranks.sh"; . "$root/scripts/bench/parallel.sh"; bench_parallel ;;
  schedules) . "$root/scripts/bench/ranks.sh"; . "$root/scripts/bench/schedules.sh"; bench_schedules ;;
  precision) . "$root/scripts/bench/ranks.sh"; . "$root/scripts/bench/precision.sh"; bench_precision ;;
  recompute) . "$root/scripts/bench/ranks.sh"; . "$root/scripts/bench/recompute.sh"; bench_recompute ;;
  attention|cross-entropy) . "$root/scripts/bench/ranks.sh"; . "$root/scripts/bench/fusion.sh"; bench_fusion "$section" ;;
esac

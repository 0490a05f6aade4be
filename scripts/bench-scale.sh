#!/usr/bin/env bash
# How pp scales with the microbatch count and the model size:
#   microbatches  the bundled MLP (microbatch size 1), 1k and 10k microbatches
#                 on 1 and 2 stages: seconds and microseconds per microbatch
#                 (of the step, and of the whole run with its start-up);
#   memory        a generated MLP with about 200 MB of weights (WIDTH wide,
#                 default 3500; written at bench time, never committed):
#                 pp-opt's peak memory compiling it into a 2-stage package
#                 (printing the final IR as text to /dev/null, as with
#                 `-o /dev/null`, or as bytecode: MLIR's text printer hexes
#                 the weights), and each rank's peak training it on 2 stages
#                 with --save-params, against the weights' size;
#   size          make_external_mlp.py's MLP (WIDTH_LARGE wide, default 4096)
#                 with LAYERS (default 18: 1.2 GB of f32 weights) and half
#                 as many layers, in ONNX external data and as a torch.export
#                 archive (make_external_pt2.py, from the benchmark venv of
#                 bench.sh --peers): pp-opt's seconds and peak memory
#                 compiling each into a 2-stage package, the ratios of the
#                 full model to the half, and one training step on 2 stages
#                 (pp-run, compiling included); and a 20,000-node chain
#                 (make_chain.py) through pp-opt and through pp-run's first
#                 step, C++ compile included.
# Peak memory is /usr/bin/time's maximum resident set size (Debian package
# `time`). Machines are noisy: compare figures of one run.
# Usage: scripts/bench-scale.sh [microbatches|memory|size]... (after scripts/build.sh;
# default microbatches and memory; size needs PyTorch 2.x in the benchmark
# venv, about 5 GB, made when missing, and 8 GB of memory and 6 GB of disk)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"
width="${WIDTH:-3500}"
out="$build/bench-scale"
sections=("${@:-microbatches memory}")
mkdir -p "$out"
[ -x /usr/bin/time ] || { echo "bench-scale: install /usr/bin/time (apt-get install time)" >&2; exit 1; }

# Prints "SECONDS MAX_RSS_KB" of the command after `--`, which must succeed.
measure() {
  /usr/bin/time -f "%e %M" -o "$out/time" "$@" > "$out/stdout" 2> "$out/stderr" || {
    cat "$out/stderr" >&2
    exit 1
  }
  cat "$out/time"
}

microbatches() {
  local model="$root/test/models/mlp6.onnx"
  printf '%-8s%14s%10s%10s%18s%18s\n' stages microbatches run_s step_s \
    us_per_mb_step us_per_mb_run
  for stages in 1 2; do
    local pkg="$out/mlp6-s$stages"
    "$build/bin/pp-opt" "$model" --batch-size=1 \
      --pp-compile="stages=$stages microbatch-size=1 loss=mse:y" \
      --pp-emit="$pkg" -o /dev/null 2> /dev/null
    for m in 1000 10000; do
      read -r seconds _ < <(measure "$build/bin/pp-run" "$pkg" --microbatches "$m" \
        --steps 1 --metrics "$out/metrics.jsonl")
      /usr/bin/python3 - "$out/metrics.jsonl" "$stages" "$m" "$seconds" <<'PY'
import json, sys
path, stages, m, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
rate = next(r["samples_per_s"] for r in map(json.loads, open(path)) if "step" in r)
step = m / rate
print(f"{stages:<8}{m:>14}{run:>10.2f}{step:>10.2f}{1e6 * step / m:>18.1f}"
      f"{1e6 * run / m:>18.1f}")
PY
    done
  done
}

memory() {
  local model="$out/mlp-w$width.onnx" pkg="$out/mlp-w$width-s2"
  [ -f "$model" ] || /usr/bin/python3 "$root/test/models/make_mlp6.py" "$model" --width "$width"
  local weights_mb
  weights_mb=$(/usr/bin/python3 -c 'import onnx, sys
m = onnx.load(sys.argv[1])
print(sum(len(t.raw_data) or 4 * len(t.float_data) for t in m.graph.initializer) / 2**20)' "$model")
  printf '%-40s%12s%12s%10s\n' what peak_MB weights_MB ratio
  report() {
    /usr/bin/python3 -c 'import sys
what, rss, weights = sys.argv[1], int(sys.argv[2]) / 1024, float(sys.argv[3])
print(f"{what:<40}{rss:>12.0f}{weights:>12.0f}{rss / weights:>10.2f}")' "$@"
  }
  for output in text bytecode; do
    local flags=()
    [ "$output" = bytecode ] && flags=(--emit-bytecode)
    read -r seconds rss < <(measure "$build/bin/pp-opt" "$model" --batch-size=1 \
      --pp-compile="stages=2 microbatch-size=1 loss=mse:y" --pp-emit="$pkg" \
      "${flags[@]}" -o /dev/null)
    report "pp-opt (compile, $output output, $seconds s)" "$rss" "$weights_mb"
  done
  # Two ranks started by hand, so that each has its own peak.
  local port secret
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  for rank in 1 0; do
    PP_JOB_SECRET=$secret RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      /usr/bin/time -f "%M" -o "$out/rank$rank.time" "$build/bin/pp-run" "$pkg" \
      --steps 1 --save-params "$out/params.bin" > "$out/rank$rank.log" 2>&1 &
  done
  wait
  report "pp-run rank 0 (stage 0, gathers)" "$(cat "$out/rank0.time")" "$weights_mb"
  report "pp-run rank 1 (stage 1)" "$(cat "$out/rank1.time")" "$weights_mb"
}

# Prints one row of the size table: WHAT, SECONDS, PEAK_KB, WEIGHTS_MB.
size_row() {
  /usr/bin/python3 -c 'import sys
what, seconds, rss, weights = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]) / 1024, float(sys.argv[4])
print(f"{what:<44}{seconds:>10.1f}{rss:>10.0f}{weights:>12.0f}{rss / weights:>8.2f}")' "$@"
}

# The output of make_external_mlp.py's MLP in FORMAT (onnx or pt2).
loss_output() {
  if [ "$1" = pt2 ]; then echo output_0; else echo y; fi
}

size() {
  local width="${WIDTH_LARGE:-4096}" layers="${LAYERS:-18}"
  source "$root/scripts/bench/peers.sh"
  local python
  python=$(peer_python)
  printf '%-44s%10s%10s%12s%8s\n' what seconds peak_MB weights_MB ratio
  local -A seconds_of rss_of
  for count in $((layers / 2)) "$layers"; do
    local dir="$out/external-l$count-w$width"
    [ -f "$dir/mlp.pt2" ] || {
      /usr/bin/python3 "$root/test/models/make_external_mlp.py" "$dir" \
        --layers "$count" --width "$width"
      "$python" "$root/test/models/make_external_pt2.py" "$dir"
    }
    local weights_mb=$((count * width * width * 4 / 1048576))
    for format in onnx pt2; do
      read -r seconds rss < <(measure "$build/bin/pp-opt" "$dir/mlp.$format" \
        --batch-size=1 --pp-compile="stages=2 microbatch-size=1 loss=mse:$(loss_output "$format")" \
        --pp-emit="$dir/$format-s2" --emit-bytecode -o /dev/null)
      seconds_of[$format-$count]=$seconds rss_of[$format-$count]=$rss
      size_row "pp-opt $format, $count layers" "$seconds" "$rss" "$weights_mb"
    done
    for format in onnx pt2; do
      read -r seconds rss < <(measure "$build/bin/pp-run" "$dir/mlp.$format" \
        --cache-dir "$dir/cache" --stages 2 --microbatch-size 1 --loss "mse:$(loss_output "$format")" \
        --steps 1)
      size_row "pp-run $format, 2 stages, 1 step (largest rank)" "$seconds" "$rss" "$weights_mb"
    done
  done
  for format in onnx pt2; do
    /usr/bin/python3 -c 'import sys
f, a, b, c, d = sys.argv[1], *map(float, sys.argv[2:])
print(f"pp-opt {f}: {b / a:.2f}x the time and {d / c:.2f}x the peak of half the weights")' \
      "$format" "${seconds_of[$format-$((layers / 2))]}" "${seconds_of[$format-$layers]}" \
      "${rss_of[$format-$((layers / 2))]}" "${rss_of[$format-$layers]}"
  done
  local chain="$out/chain-20000.onnx"
  [ -f "$chain" ] || /usr/bin/python3 "$root/test/models/make_chain.py" "$chain" --nodes 20000
  read -r seconds rss < <(measure "$build/bin/pp-opt" "$chain" --batch-size=1 \
    --pp-compile="stages=2 microbatch-size=1 loss=mse:y" \
    --pp-emit="$out/chain-s2" --emit-bytecode -o /dev/null)
  echo "pp-opt, 20000-node chain, 2 stages: $seconds s"
  rm -rf "$out/chain-cache"
  read -r seconds rss < <(measure "$build/bin/pp-run" "$chain" --cache-dir "$out/chain-cache" \
    --stages 2 --microbatch-size 1 --loss mse:y --steps 1)
  echo "pp-run, 20000-node chain, 2 stages, first step (C++ compile included): $seconds s"
}

for section in ${sections[*]}; do
  echo "== $section"
  "$section"
done

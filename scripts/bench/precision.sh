# The precision section of scripts/bench.sh (sourced after ranks.sh; it sets
# root, build, out and width): bf16 against f32 (pp-run --precision) on the
# bundled byte-level GPT and the WIDTH-wide MLP, at 1 stage and 2 stages
# (1F1B), one thread per rank, runs alternating; step times, each rank's
# activation bytes and peak RSS, and the bf16 and f32 matmul rates as shares
# of this CPU's best GEMM of the type (pp-gemm-rate --dtype). See bench.sh's
# header and docs/development.md, Benchmarks.

bench_precision() {
  [ -x /usr/bin/time ] || { echo "bench.sh: install /usr/bin/time (apt-get install time)" >&2; exit 1; }
  local runs="$out/precision" repeats="${PP_BENCH_REPEATS:-3}"
  local peer_timeout="${PP_BENCH_TIMEOUT:-300}" pp_threads=(--threads 1)
  local microbatches=8
  rm -rf "$runs"
  mkdir -p "$runs"
  # One engine choice per shape for every run, measured in the first.
  export PP_GEMM_CACHE="$runs/gemm-engines.json"
  uptime > "$runs/load-before"
  local dtype
  for dtype in f32 bf16; do
    "$build/bin/pp-gemm-rate" --dtype "$dtype" --threads 1 > "$runs/rate-$dtype-before.jsonl"
  done

  local mlp="$out/mlp6-w$width.onnx"
  [ -f "$mlp" ] || /usr/bin/python3 "$root/test/models/make_mlp6.py" "$mlp" --width "$width"
  # NAME|MODEL|MICROBATCH SIZE|STEPS|LOSS|INPUT SHAPE (pp-run's
  # --input-shape; none for the ONNX MLP)
  local models=("byte-gpt|$root/test/models/byte-gpt.traced.pt|16|8|cross_entropy:output_0|tokens=?x32xi64"
                "mlp|$mlp|64|6|mse:y|")
  local line name model microbatch_size steps loss input dir precision stages r
  for line in "${models[@]}"; do
    IFS='|' read -r name model microbatch_size steps loss input <<< "$line"
    local shapes=()
    [ -z "$input" ] || shapes=(--input-shape "$input")
    dir="$runs/$name"
    mkdir -p "$dir"
    /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
        ["model", "microbatch_size", "microbatches", "steps"], sys.argv[1:]))))' \
      "$model" "$microbatch_size" "$microbatches" "$steps" > "$dir/config.json"
    # The 1-stage program's IR: its matmuls' shapes give the FLOPs per
    # microbatch (the same in both precisions).
    "$build/bin/pp-opt" "$model" "${shapes[@]}" --batch-size "$microbatch_size" \
      --pp-compile="stages=1 microbatch-size=$microbatch_size loss=$loss" \
      > "$dir/program.mlir" 2> "$dir/program.log"
    for precision in f32 bf16; do
      for stages in 1 2; do
        "$build/bin/pp-run" "$model" "${shapes[@]}" --loss "$loss" --stages "$stages" \
          --precision "$precision" --microbatch-size "$microbatch_size" \
          --microbatches "$microbatches" --cache-dir "$dir/$precision-s$stages" \
          --print-schedule > /dev/null
      done
    done
    # Each configuration alternating, then one 1-stage run each with
    # --profile (its brackets cost a little).
    for r in $(seq "$repeats") profile; do
      for precision in f32 bf16; do
        for stages in 1 2; do
          if [ "$r" = profile ]; then
            [ "$stages" = 1 ] || continue
            run_pp "$dir" "$precision-s$stages" "$stages" 1f1b "$precision-s$stages-profile" \
              "$steps" --profile "$dir/$precision-s$stages-profile.json"
          else
            run_pp "$dir" "$precision-s$stages" "$stages" 1f1b "$precision-s$stages-r$r" "$steps"
          fi
        done
      done
    done
  done
  for dtype in f32 bf16; do
    "$build/bin/pp-gemm-rate" --dtype "$dtype" --threads 1 > "$runs/rate-$dtype-after.jsonl"
  done
  uptime > "$runs/load-after"
  /usr/bin/python3 "$root/scripts/bench/precision_table.py" "$runs" "$repeats" byte-gpt mlp
}

# The recompute section of scripts/bench.sh (sourced after ranks.sh; it sets
# root, build, out and width): activation recomputation (pp-run --recompute
# none|selective|full) and offload (--recompute none --offload-activations)
# on the bundled byte-level GPT and the WIDTH-wide MLP,
# 4 stages x 8 microbatches (1F1B) cut at the same points for every policy,
# one thread per rank, runs alternating; step times and their ratio to
# none's, and each rank's measured activation bytes and their ratio to
# none's. On the GPT also `--recompute auto` and `full` under one
# --memory-limit that no cut meets without recomputation, each cut by the
# partitioner for its policy, alternating with the others: their step times,
# their ratio and their peaks. See bench.sh's header and
# docs/development.md, Benchmarks.

bench_recompute() {
  [ -x /usr/bin/time ] || { echo "bench.sh: install /usr/bin/time (apt-get install time)" >&2; exit 1; }
  local runs="$out/recompute" repeats="${PP_BENCH_REPEATS:-3}"
  local peer_timeout="${PP_BENCH_TIMEOUT:-300}" pp_threads=(--threads 1)
  local microbatches=8 stages=4
  rm -rf "$runs"
  mkdir -p "$runs"
  # One engine choice per shape for every run, measured in the first.
  export PP_GEMM_CACHE="$runs/gemm-engines.json"
  uptime > "$runs/load-before"
  "$build/bin/pp-data" pack /usr/share/common-licenses/GPL-3 -o "$runs/train.tok" > /dev/null

  local mlp="$out/mlp6-w$width.onnx"
  [ -f "$mlp" ] || /usr/bin/python3 "$root/test/models/make_mlp6.py" "$mlp" --width "$width"
  # NAME|MODEL|MICROBATCH SIZE|STEPS|LOSS|INPUT SHAPE (pp-run's
  # --input-shape; none for the ONNX MLP)|SPLIT POINTS|DATA (pp-run's
  # --data and --seq-len; none for synthetic data)|MEMORY LIMIT (bytes per
  # rank, or none). The GPT is cut at its blocks' halves, the MLP before
  # fc2, fc3 and fc5: the same cuts for none, selective and full (the
  # partitioner's would follow each policy's costs). Under the GPT's limit,
  # 3000000 bytes (none's smallest peak at any cut is over 3.3 MB), auto
  # and full are each cut by the partitioner (the policies auto-limit and
  # full-limit).
  local models=("byte-gpt|$root/test/models/byte-gpt.traced.pt|16|6|cross_entropy:output_0|tokens=?x32xi64|blocks.0.ln2/layer_norm,blocks.1.ln1/layer_norm,blocks.1.ln2/layer_norm|--data $runs/train.tok --seq-len 32|3000000"
                "mlp|$mlp|64|6|mse:y||fc2,fc3,fc5||")
  local line name model microbatch_size steps loss input split_points data limit dir policy r
  for line in "${models[@]}"; do
    IFS='|' read -r name model microbatch_size steps loss input split_points data limit <<< "$line"
    local shapes=() data_args=() policies=(none offload selective full) cuts
    local recompute offload
    [ -z "$input" ] || shapes=(--input-shape "$input")
    [ -z "$limit" ] || policies+=(auto-limit full-limit)
    read -r -a data_args <<< "$data"
    dir="$runs/$name"
    mkdir -p "$dir"
    /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
        ["model", "microbatch_size", "microbatches", "steps", "split_points",
         "memory_limit"], sys.argv[1:]))))' \
      "$model" "$microbatch_size" "$microbatches" "$steps" "$split_points" \
      "$limit" > "$dir/config.json"
    # The limit must be one that none cannot meet: its refusal names the
    # smallest peak that none reaches.
    if [ -n "$limit" ] && "$build/bin/pp-run" "$model" "${shapes[@]}" --loss "$loss" \
        --stages "$stages" --memory-limit "$limit" --microbatch-size "$microbatch_size" \
        --microbatches "$microbatches" --cache-dir "$dir/none-limit" --print-schedule \
        > /dev/null 2> "$dir/none-limit.err"; then
      echo "bench.sh: --recompute none meets --memory-limit $limit on $name;" \
           "choose a smaller limit in scripts/bench/recompute.sh" >&2
      exit 1
    fi
    for policy in "${policies[@]}"; do
      cuts=(--split-points "$split_points")
      [ "${policy%-limit}" = "$policy" ] || cuts=(--memory-limit "$limit")
      # offload is none's package run with --offload-activations.
      recompute="${policy%-limit}"
      [ "$recompute" != offload ] || recompute=none
      "$build/bin/pp-run" "$model" "${shapes[@]}" --loss "$loss" --stages "$stages" \
        "${cuts[@]}" --recompute "$recompute" \
        --microbatch-size "$microbatch_size" --microbatches "$microbatches" \
        --cache-dir "$dir/$policy" --print-schedule > /dev/null
    done
    # Each policy alternating, so that the machine's noise falls on all.
    for r in $(seq "$repeats"); do
      for policy in "${policies[@]}"; do
        offload=()
        [ "$policy" != offload ] || offload=(--offload-activations)
        run_pp "$dir" "$policy" "$stages" 1f1b "$policy-r$r" "$steps" \
          "${data_args[@]}" "${offload[@]}"
      done
    done
  done
  uptime > "$runs/load-after"
  /usr/bin/python3 "$root/scripts/bench/recompute_table.py" "$runs" "$repeats" byte-gpt mlp
}

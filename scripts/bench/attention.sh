# The attention section of scripts/bench.sh (sourced after ranks.sh; it sets
# root, build and out): fused attention (pp-fuse-attention, nn.attention)
# against the unfused ops (pp-compile fuse-attention=false) at 1 stage, one
# thread, runs alternating, on the bundled byte-level GPT and, with
# PP_BENCH_ATTENTION_MODELS naming them, the GPT-2- and LLaMA-shaped
# exports of --peers (build/bench/hf-models): step times and their ratio,
# attention's share of the step (--profile's breakdown), activation bytes
# and peak RSS. See bench.sh's header and docs/development.md, Benchmarks.

bench_attention() {
  [ -x /usr/bin/time ] || { echo "bench.sh: install /usr/bin/time (apt-get install time)" >&2; exit 1; }
  local runs="$out/attention" repeats="${PP_BENCH_REPEATS:-3}"
  local peer_timeout="${PP_BENCH_TIMEOUT:-600}" pp_threads=(--threads 1)
  local microbatches=4
  rm -rf "$runs"
  mkdir -p "$runs"
  export PP_GEMM_CACHE="$runs/gemm-engines.json"
  uptime > "$runs/load-before"
  local hf="$out/hf-models"
  # NAME|MODEL|MICROBATCH SIZE|STEPS|LOSS|INPUT SHAPE (TorchScript only)
  local -A known=(
    [byte-gpt]="$root/test/models/byte-gpt.traced.pt|16|8|cross_entropy:output_0|tokens=?x32xi64"
    [gpt2]="$hf/gpt2.onnx|2|3|cross_entropy:logits|"
    [llama]="$hf/llama.onnx|2|3|cross_entropy:logits|")
  local names=(${PP_BENCH_ATTENTION_MODELS:-byte-gpt})
  local name model microbatch_size steps loss input dir fuse r
  for name in "${names[@]}"; do
    [ -n "${known[$name]:-}" ] || { echo "bench.sh: no attention model '$name' (byte-gpt, gpt2, llama)" >&2; exit 2; }
    IFS='|' read -r model microbatch_size steps loss input <<< "${known[$name]}"
    [ -f "$model" ] || { echo "bench.sh: $model is missing; export it with the benchmark venv's python (scripts/bench.sh --peers makes one): VENV/bin/python scripts/bench/hf_models.py $hf $name" >&2; exit 1; }
    local shapes=()
    [ -z "$input" ] || shapes=(--input-shape "$input")
    dir="$runs/$name"
    mkdir -p "$dir"
    /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
        ["model", "microbatch_size", "microbatches", "steps"], sys.argv[1:]))))' \
      "$model" "$microbatch_size" "$microbatches" "$steps" > "$dir/config.json"
    for fuse in true false; do
      mkdir -p "$dir/fuse-$fuse/package"
      "$build/bin/pp-opt" "$model" "${shapes[@]}" --batch-size "$microbatch_size" \
        --pp-compile="stages=1 microbatch-size=$microbatch_size loss=$loss fuse-attention=$fuse" \
        --pp-emit="$dir/fuse-$fuse/package" -o /dev/null 2> "$dir/fuse-$fuse.compile.log"
    done
    for r in $(seq "$repeats") profile; do
      for fuse in true false; do
        if [ "$r" = profile ]; then
          run_pp "$dir" "fuse-$fuse" 1 1f1b "fuse-$fuse-profile" "$steps" \
            --profile "$dir/fuse-$fuse-profile.json"
        else
          run_pp "$dir" "fuse-$fuse" 1 1f1b "fuse-$fuse-r$r" "$steps"
        fi
      done
    done
  done
  uptime > "$runs/load-after"
  /usr/bin/python3 "$root/scripts/bench/attention_table.py" "$runs" "$repeats" "${names[@]}"
}

# The fusion sections of scripts/bench.sh (sourced after ranks.sh; they set
# root, build and out): a fused program against the separate ops at 1
# stage, one thread, runs alternating, on the bundled byte-level GPT and,
# with PP_BENCH_ATTENTION_MODELS or PP_BENCH_CROSS_ENTROPY_MODELS naming
# them, the GPT-2- and LLaMA-shaped exports of --peers
# (build/bench/hf-models): step times and their ratio, the fused kernels'
# share of the step (--profile's breakdown), activation bytes and peak RSS.
#   bench_fusion attention      fused attention (pp-fuse-attention,
#                               nn.attention) against fuse-attention=false
#   bench_fusion cross-entropy  the fused LM head and loss
#                               (pp-fuse-cross-entropy,
#                               nn.linear_cross_entropy) against
#                               fuse-cross-entropy=false, without
#                               recomputation and under recompute=full
# See bench.sh's header and docs/development.md, Benchmarks.

# The configurations of a fusion kind, one "KEY|pp-compile options" a line.
fusion_configs() {
  case "$1" in
    attention) printf '%s\n' "fuse-true|fuse-attention=true" "fuse-false|fuse-attention=false" ;;
    cross-entropy) printf '%s\n' "none-fused|fuse-cross-entropy=true" \
      "none-separate|fuse-cross-entropy=false" \
      "full-fused|recompute=full fuse-cross-entropy=true" \
      "full-separate|recompute=full fuse-cross-entropy=false" ;;
  esac
}

bench_fusion() {
  local kind="$1"
  [ -x /usr/bin/time ] || { echo "bench.sh: install /usr/bin/time (apt-get install time)" >&2; exit 1; }
  local runs="$out/$kind" repeats="${PP_BENCH_REPEATS:-3}"
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
  local models_variable="PP_BENCH_${kind^^}_MODELS"
  models_variable="${models_variable//-/_}"
  local names=(${!models_variable:-byte-gpt})
  local configs
  mapfile -t configs < <(fusion_configs "$kind")
  local name model microbatch_size steps loss input dir config key options r
  for name in "${names[@]}"; do
    [ -n "${known[$name]:-}" ] || { echo "bench.sh: no $kind model '$name' (byte-gpt, gpt2, llama)" >&2; exit 2; }
    IFS='|' read -r model microbatch_size steps loss input <<< "${known[$name]}"
    [ -f "$model" ] || { echo "bench.sh: $model is missing; export it with the benchmark venv's python (scripts/bench.sh --peers makes one): VENV/bin/python scripts/bench/hf_models.py $hf $name" >&2; exit 1; }
    local shapes=()
    [ -z "$input" ] || shapes=(--input-shape "$input")
    dir="$runs/$name"
    mkdir -p "$dir"
    /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
        ["model", "microbatch_size", "microbatches", "steps"], sys.argv[1:]))))' \
      "$model" "$microbatch_size" "$microbatches" "$steps" > "$dir/config.json"
    for config in "${configs[@]}"; do
      IFS='|' read -r key options <<< "$config"
      mkdir -p "$dir/$key/package"
      "$build/bin/pp-opt" "$model" "${shapes[@]}" --batch-size "$microbatch_size" \
        --pp-compile="stages=1 microbatch-size=$microbatch_size loss=$loss $options" \
        --pp-emit="$dir/$key/package" -o /dev/null 2> "$dir/$key.compile.log"
    done
    for r in $(seq "$repeats") profile; do
      for config in "${configs[@]}"; do
        key="${config%%|*}"
        if [ "$r" = profile ]; then
          run_pp "$dir" "$key" 1 1f1b "$key-profile" "$steps" \
            --profile "$dir/$key-profile.json"
        else
          run_pp "$dir" "$key" 1 1f1b "$key-r$r" "$steps"
        fi
      done
    done
  done
  uptime > "$runs/load-after"
  /usr/bin/python3 "$root/scripts/bench/fusion_table.py" "$kind" "$runs" "$repeats" "${names[@]}"
}

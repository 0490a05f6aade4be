# The peers section of scripts/bench.sh (sourced after ranks.sh; it sets
# root, build, out and width): pp against PyTorch 2.x, one thread per rank.
# See bench.sh's header and docs/development.md, Benchmarks.

# The Hugging Face models of scripts/bench/hf_models.py (opt-in: a step
# takes seconds) and what their export and PyTorch peer import beyond torch.
hf_models=(gpt2 llama)
hf_packages=(transformers onnxscript safetensors)

# peer_python [PACKAGE...]: the Python of a virtual environment with
# PyTorch 2.x, onnx and the packages given, made or completed when missing
# (all benchmark-only dependencies). Run in $(...), where bash turns
# `set -e` off: each step exits by itself.
peer_python() {
  local venv="${PP_BENCH_VENV:-$build/bench-venv}"
  if [ ! -x "$venv/bin/python" ]; then
    echo "bench.sh: making $venv with PyTorch 2.x (pip install torch numpy onnx, about 5 GB)" >&2
    python3 -m venv "$venv" >&2 && "$venv/bin/pip" install --quiet torch numpy onnx >&2 ||
      { echo "bench.sh: cannot make $venv; set PP_BENCH_VENV to a virtual environment with torch 2.x and onnx" >&2; exit 1; }
  fi
  if ! "$venv/bin/python" -c 'import onnx' 2> /dev/null; then
    "$venv/bin/pip" install --quiet onnx >&2 ||
      { echo "bench.sh: cannot install onnx into $venv" >&2; exit 1; }
  fi
  if [ $# -gt 0 ] && ! "$venv/bin/python" -c "import $(IFS=,; echo "$*")" 2> /dev/null; then
    echo "bench.sh: installing $* into $venv" >&2
    "$venv/bin/pip" install --quiet "$@" >&2 ||
      { echo "bench.sh: cannot install $* into $venv" >&2; exit 1; }
  fi
  "$venv/bin/python" -c 'import sys, torch
if int(torch.__version__.split(".")[0]) < 2:
    sys.exit(f"bench.sh: {sys.prefix} has PyTorch {torch.__version__}; the peers need 2.x: "
             "set PP_BENCH_VENV to another virtual environment, or remove this one")' >&2 || exit 1
  echo "$venv/bin/python"
}

# run_peer DIR STAGES SCHEDULE TAG [peer.py options]: PyTorch eager (1
# stage) or a torch.distributed.pipelining job (2 stages); each rank writes
# TAG.rankR.json.
run_peer() {
  local dir="$1" stages="$2" schedule="$3" tag="$4"
  shift 4
  local common=("$kind" "$model" --microbatch-size "$microbatch_size"
                --microbatches "$microbatches" --steps "$steps" "$@")
  if [ "$stages" = 1 ]; then
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 timeout "$peer_timeout" "$python" \
      "$root/scripts/bench/peer.py" eager "${common[@]}" \
      --out "$dir/$tag.rank0.json" > "$dir/$tag.rank0.log" 2>&1 ||
      { tail -n 20 "$dir/$tag.rank0.log" >&2; exit 1; }
    return
  fi
  local port rank pids=() logs=()
  port=$(free_port)
  for rank in $(seq $((stages - 1)) -1 0); do
    RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=$stages MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
      timeout "$peer_timeout" "$python" "$root/scripts/bench/peer.py" pipeline \
      "${common[@]}" --schedule "$schedule" --out "$dir/$tag.rank$rank.json" \
      > "$dir/$tag.rank$rank.log" 2>&1 &
    pids+=($!) logs+=("$dir/$tag.rank$rank.log")
  done
  wait_ranks "${pids[@]}" -- "${logs[@]}"
}

# Appends the machine's single-thread SGEMM rates to FILE as JSON lines:
# pp-gemm-rate's (when built) and torch.mm's.
measure_sgemm() {
  local file="$1"
  if [ -x "$build/bin/pp-gemm-rate" ]; then
    "$build/bin/pp-gemm-rate" --threads 1 >> "$file" ||
      echo "bench.sh: pp-gemm-rate --threads 1 failed; the best SGEMM rate is torch.mm's" >&2
  fi
  OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$python" "$root/scripts/bench/peer.py" sgemm \
    >> "$file" 2> /dev/null
}

# run_pair DIR RUN R: repeat R of RUN, pp's job then PyTorch's (the names
# peers_table.py reads): s1 (1 stage), s1-t2 (1 stage, 2 threads each),
# s2-SCHEDULE (2 ranks; pp with --trace, which gives the bubble) and
# s2-1f1b-flops (PyTorch only, split where the FLOPs balance; pp's split is
# its partitioner's, as in s2-1f1b).
run_pair() {
  local dir="$1" run="$2" r="$3"
  case "$run" in
    s1) run_pp "$dir" cache-s1 1 1f1b "pp-s1-r$r" "$steps"
        run_peer "$dir" 1 eager "peer-s1-r$r" ;;
    s1-t2) ( pp_threads=(--threads 2); run_pp "$dir" cache-s1 1 1f1b "pp-s1-t2-r$r" "$steps" )
           run_peer "$dir" 1 eager "peer-s1-t2-r$r" --threads 2 ;;
    s2-1f1b-flops) run_peer "$dir" 2 1f1b "peer-$run-r$r" --split flops ;;
    s2-*) run_pp "$dir" cache-s2 2 "${run#s2-}" "pp-$run-r$r" "$steps" \
            --trace "$dir/pp-$run-r$r.trace.json"
          run_peer "$dir" 2 "${run#s2-}" "peer-$run-r$r" ;;
  esac
}

bench_peers() {
  [ -x /usr/bin/time ] || { echo "bench.sh: install /usr/bin/time (apt-get install time)" >&2; exit 1; }
  local names=(${PP_BENCH_PEER_MODELS:-mlp gpt byte-gpt}) name packages=()
  for name in "${names[@]}"; do
    [[ " ${hf_models[*]} " == *" $name "* ]] && packages=("${hf_packages[@]}")
  done
  local python
  python=$(peer_python "${packages[@]}")
  local peers="$out/peers" repeats="${PP_BENCH_REPEATS:-3}"
  local peer_timeout="${PP_BENCH_TIMEOUT:-300}" pp_threads=() help
  help=$("$build/bin/pp-run" --help)
  [[ "$help" == *" --threads"* ]] && pp_threads=(--threads 1)
  rm -rf "$peers"
  mkdir -p "$peers"
  echo "${pp_threads[*]:-no --threads option} and OPENBLAS_NUM_THREADS=1" > "$peers/pp-threads"
  uptime > "$peers/load-before"
  # The SGEMM rates, before and after the runs: the table takes the best.
  measure_sgemm "$peers/sgemm.jsonl"

  local kind model loss inputs microbatch_size microbatches steps stages runs
  local run r dir
  for name in "${names[@]}"; do
    microbatches=8 runs=(s1 s2-1f1b s2-gpipe)
    case "$name" in
      mlp) kind=mlp6 model="$out/mlp6-w$width.onnx" loss=mse:y inputs=()
           microbatch_size=64 steps=6
           [ -f "$model" ] || /usr/bin/python3 "$root/test/models/make_mlp6.py" "$model" --width "$width" ;;
      gpt) kind=gpt model="$root/test/models/gpt.traced.pt" loss=cross_entropy:output_0
           inputs=(--input-shape "tokens=?x8xi64") microbatch_size=16 steps=20 ;;
      byte-gpt) kind=gpt model="$root/test/models/byte-gpt.traced.pt" loss=cross_entropy:output_0
           inputs=(--input-shape "tokens=?x32xi64") microbatch_size=16 steps=8 ;;
      gpt2|llama)
           # A step takes seconds: 3 steps, of which the table drops the first.
           kind=hf model="$out/hf-models/$name.onnx" loss=cross_entropy:logits inputs=()
           microbatch_size=2 microbatches=4 steps=3 runs=(s1 s1-t2 s2-1f1b s2-1f1b-flops)
           mkdir -p "$out/hf-models"
           "$python" "$root/scripts/bench/hf_models.py" "$out/hf-models" "$name" ;;
      *) echo "bench.sh: unknown peer model '$name' in PP_BENCH_PEER_MODELS; use mlp, gpt," \
              "byte-gpt, gpt2 or llama" >&2
         exit 2 ;;
    esac
    dir="$peers/$name"
    mkdir -p "$dir"
    /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
        ["model", "width", "microbatch_size", "microbatches", "steps", "runs"],
        sys.argv[1:]))))' \
      "$model" "$width" "$microbatch_size" "$microbatches" "$steps" "${runs[*]}" \
      > "$dir/config.json"
    # Each compile's seconds and peak RSS (KB) in compile-sSTAGES.time.
    for stages in 1 2; do
      /usr/bin/time -f "%e %M" -o "$dir/compile-s$stages.time" \
        "$build/bin/pp-run" "$model" --stages "$stages" --microbatch-size "$microbatch_size" \
        --loss "$loss" "${inputs[@]}" --microbatches "$microbatches" \
        --cache-dir "$dir/cache-s$stages" --print-schedule > "$dir/compile-s$stages.log" 2>&1 ||
        { cat "$dir/compile-s$stages.log" >&2; exit 1; }
    done
    # pp's matmul seconds per step: the difference of two profiled runs, so
    # that the first step's warm-up drops out.
    run_pp "$dir" cache-s1 1 1f1b profile-first 1 --profile "$dir/profile-first.json"
    run_pp "$dir" cache-s1 1 1f1b profile-all "$steps" --profile "$dir/profile-all.json"
    for r in $(seq "$repeats"); do
      for run in "${runs[@]}"; do
        run_pair "$dir" "$run" "$r"
      done
    done
  done
  measure_sgemm "$peers/sgemm.jsonl"
  uptime > "$peers/load-after"
  "$python" "$root/scripts/bench/peers_table.py" "$peers" "$repeats" "${names[@]}"
}

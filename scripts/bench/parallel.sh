# The parallel section of scripts/bench.sh (sourced after ranks.sh; it sets
# root, build and out): tensor parallelism (tp 2, and tp 2 with sequence
# parallelism), pipeline parallelism (pp 2, 1F1B) and data parallelism
# (dp 2) on 2 CPU ranks against 1 rank, at the same global batch, one
# thread per rank; pp 2 and dp 2 also with sealed links (--link-integrity
# always) against the same without. See bench.sh's header and docs/development.md,
# Benchmarks.

bench_parallel() {
  [ -x /usr/bin/time ] || { echo "bench.sh: install /usr/bin/time (apt-get install time)" >&2; exit 1; }
  local runs="$out/parallel" repeats="${PP_BENCH_REPEATS:-3}"
  local names=(${PP_BENCH_PARALLEL_MODELS:-gpt byte-gpt})
  local peer_timeout="${PP_BENCH_TIMEOUT:-300}" pp_threads=(--threads 1)
  rm -rf "$runs"
  mkdir -p "$runs"
  uptime > "$runs/load-before"

  local name model inputs microbatch_size=16 steps dir r
  # The configurations: NAME|CACHE|RANKS|MICROBATCHES|the pp-run options
  # compiling the package into CACHE (dp 2 runs the 1-rank one)|those
  # running it.
  # With a choice of tp collectives, tp runs over shared memory, and over
  # Gloo once more.
  local tp_run="" tp_gloo=()
  if [[ "$("$build/bin/pp-run" --help)" == *"--tp-collectives"* ]]; then
    tp_run="--tp-collectives shm"
    tp_gloo=("tp2-gloo|tp2|2|8|--stages 1 --tp 2|--tp-collectives gloo")
    echo "shared memory (--tp-collectives shm; tp 2, Gloo: --tp-collectives gloo)"
  else
    echo "Gloo (this pp-run has no --tp-collectives)"
  fi > "$runs/tp-collectives"
  local configs=("1-rank|s1|1|8|--stages 1|"
                 "tp2|tp2|2|8|--stages 1 --tp 2|$tp_run"
                 "${tp_gloo[@]}"
                 "tp2-sp|tp2-sp|2|8|--stages 1 --tp 2 --sp|$tp_run"
                 "pp2|s2|2|8|--stages 2|"
                 "dp2|s1|2|4|--stages 1|--dp 2")
  # With --link-integrity, pp 2 and dp 2 once more with every link's
  # messages sealed (HMAC-SHA256): what sealing the links between machines
  # costs.
  if [[ "$("$build/bin/pp-run" --help)" == *"--link-integrity"* ]]; then
    configs+=("pp2-sealed|s2|2|8|--stages 2|--link-integrity always"
              "dp2-sealed|s1|2|4|--stages 1|--dp 2 --link-integrity always")
  fi
  local line config cache ranks microbatches compile run
  for name in "${names[@]}"; do
    case "$name" in
      gpt) model="$root/test/models/gpt.traced.pt" inputs="tokens=?x8xi64" steps=20 ;;
      byte-gpt)
        # 257 tokens do not split over tp 2: the same GPT with 258.
        model="$out/byte-gpt-v258.traced.pt" inputs="tokens=?x32xi64" steps=8
        [ -f "$model" ] ||
          /usr/bin/python3 "$root/test/models/make_byte_gpt.py" "$out" --vocab 258 \
            > "$out/make-byte-gpt.log" 2>&1 || { cat "$out/make-byte-gpt.log" >&2; exit 1; } ;;
      *) echo "bench.sh: unknown model '$name' in PP_BENCH_PARALLEL_MODELS; use gpt or byte-gpt" >&2
         exit 2 ;;
    esac
    dir="$runs/$name"
    mkdir -p "$dir"
    /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
        ["model", "microbatch_size", "steps"], sys.argv[1:]))))' \
      "$model" "$microbatch_size" "$steps" > "$dir/config.json"
    # A configuration that does not compile is left out of the runs; the
    # table shows its error.
    for line in "${configs[@]}"; do
      IFS='|' read -r config cache ranks microbatches compile run <<< "$line"
      if [ ! -d "$dir/$cache" ] && [ ! -f "$dir/compile-$cache.error" ]; then
        "$build/bin/pp-run" "$model" $compile --microbatch-size "$microbatch_size" \
          --loss cross_entropy:output_0 --input-shape "$inputs" \
          --microbatches "$microbatches" --cache-dir "$dir/$cache" --print-schedule \
          > "$dir/compile-$cache.log" 2>&1 ||
          { rm -rf "${dir:?}/$cache"; grep -m1 -v '^pp-run: error: cannot compile' \
              "$dir/compile-$cache.log" > "$dir/compile-$cache.error"; }
      fi
      if [ -f "$dir/compile-$cache.error" ]; then
        cp "$dir/compile-$cache.error" "$dir/$config.failed"
      fi
    done
    # Each configuration alternating, then one run each with --profile (its
    # brackets cost a little).
    for r in $(seq "$repeats") profile; do
      for line in "${configs[@]}"; do
        IFS='|' read -r config cache ranks microbatches compile run <<< "$line"
        [ -f "$dir/$config.failed" ] && continue
        if [ "$r" = profile ]; then
          run_pp "$dir" "$cache" "$ranks" 1f1b "$config-profile" "$steps" $run \
            --profile "$dir/$config-profile.json"
        else
          run_pp "$dir" "$cache" "$ranks" 1f1b "$config-r$r" "$steps" $run
        fi
      done
    done
  done
  uptime > "$runs/load-after"
  /usr/bin/python3 "$root/scripts/bench/parallel_table.py" "$runs" "$repeats" "${names[@]}"
}

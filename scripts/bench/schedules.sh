# The schedules section of scripts/bench.sh (sourced after ranks.sh; it sets
# root, build and out): every pipeline schedule on 2 CPU ranks, one thread
# each, on the bundled byte-level GPT (d_model 64, sequences of 32, 2
# blocks; the small test GPT's microbatches are too short for the ranks'
# compute to outweigh their messages) or a Hugging Face GPT-2- or
# LLaMA-shaped model (PP_BENCH_SCHEDULES_MODEL=gpt2|llama, as `--peers`
# exports them): step time, the bubble measured from the run's trace and
# the bubble the schedule predicts. PP_BENCH_SCHEDULES chooses the
# schedules and PP_BENCH_SCHEDULES_MICROBATCHES the microbatch counts
# (default 4). See bench.sh's header and docs/development.md, Benchmarks.

bench_schedules() {
  local runs="$out/schedules" repeats="${PP_BENCH_REPEATS:-3}"
  local peer_timeout="${PP_BENCH_TIMEOUT:-300}" pp_threads=(--threads 1)
  local name="${PP_BENCH_SCHEDULES_MODEL:-byte-gpt}" model inputs=() loss
  local microbatch_size steps
  case "$name" in
    byte-gpt) model="$root/test/models/byte-gpt.traced.pt" loss=cross_entropy:output_0
              inputs=(--input-shape "tokens=?x32xi64") microbatch_size=32 steps=12 ;;
    gpt2|llama)
      # The Hugging Face exports that `--peers` makes (scripts/bench/hf_models.py).
      model="$out/hf-models/$name.onnx" loss=cross_entropy:logits microbatch_size=2 steps=3
      [ -f "$model" ] || { echo "bench.sh: no $model; run PP_BENCH_PEER_MODELS=$name" \
                             "scripts/bench.sh --peers first, which exports it" >&2; exit 1; } ;;
    *) echo "bench.sh: unknown PP_BENCH_SCHEDULES_MODEL '$name'; use byte-gpt, gpt2 or llama" >&2
       exit 2 ;;
  esac
  local schedules=(${PP_BENCH_SCHEDULES:-gpipe 1f1b interleaved-1f1b zb-h1 zb-v})
  local counts=(${PP_BENCH_SCHEDULES_MICROBATCHES:-4})
  rm -rf "$runs"
  mkdir -p "$runs"
  uptime > "$runs/load-before"
  /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
      ["name", "model", "microbatch_size", "steps", "schedules", "microbatches"],
      sys.argv[1:]))))' \
    "$name" "$model" "$microbatch_size" "$steps" "${schedules[*]}" "${counts[*]}" \
    > "$runs/config.json"

  # Each schedule compiles its own package for each microbatch count (its
  # chunks, a split backward; the partition and the prediction see m), in
  # RUN = SCHEDULE-mM. One that does not compile is left out of the runs; the
  # table shows its error. interleaved-1f1b runs 2 virtual stages per rank.
  local schedule microbatches run options
  for schedule in "${schedules[@]}"; do
    options=()
    [ "$schedule" = interleaved-1f1b ] && options=(--virtual-stages 2)
    for microbatches in "${counts[@]}"; do
      run="$schedule-m$microbatches"
      "$build/bin/pp-run" "$model" --stages 2 --schedule "$schedule" "${options[@]}" \
        --microbatch-size "$microbatch_size" --loss "$loss" "${inputs[@]}" \
        --microbatches "$microbatches" --cache-dir "$runs/$run" --print-schedule \
        > "$runs/compile-$run.log" 2>&1 ||
        { rm -rf "${runs:?}/$run"
          grep -m1 -v '^pp-run: error: cannot compile' "$runs/compile-$run.log" \
            > "$runs/$run.failed"; }
    done
  done
  # The runs alternating, each with --trace (a few spans per microbatch:
  # its cost is not measurable at these sizes). A run that fails is shown
  # in the table with the end of rank 0's log.
  local r
  for r in $(seq "$repeats"); do
    for schedule in "${schedules[@]}"; do
      for microbatches in "${counts[@]}"; do
        run="$schedule-m$microbatches"
        [ -f "$runs/$run.failed" ] && continue
        ( run_pp "$runs" "$run" 2 "$schedule" "$run-r$r" "$steps" \
            --trace "$runs/$run-r$r.trace.json" ) 2> "$runs/$run-r$r.error" ||
          tail -n 3 "$runs/$run-r$r.rank0.log" > "$runs/$run.failed"
      done
    done
  done
  uptime > "$runs/load-after"
  /usr/bin/python3 "$root/scripts/bench/schedules_table.py" "$runs" "$repeats"
}

# The schedules section of scripts/bench.sh (sourced after ranks.sh; it sets
# root, build and out): every pipeline schedule on 2 CPU ranks, one thread
# each, on the bundled byte-level GPT (d_model 64, sequences of 32, 2
# blocks; the small test GPT's microbatches are too short for the ranks'
# compute to outweigh their messages): step time, the bubble measured from the run's
# trace and the bubble the schedule predicts. See bench.sh's header and
# docs/development.md, Benchmarks.

bench_schedules() {
  local runs="$out/schedules" repeats="${PP_BENCH_REPEATS:-3}"
  local peer_timeout="${PP_BENCH_TIMEOUT:-300}" pp_threads=(--threads 1)
  local model="$root/test/models/byte-gpt.traced.pt" inputs="tokens=?x32xi64"
  local microbatch_size=32 microbatches=4 steps=12
  rm -rf "$runs"
  mkdir -p "$runs"
  uptime > "$runs/load-before"
  /usr/bin/python3 -c 'import json, sys; print(json.dumps(dict(zip(
      ["model", "microbatch_size", "microbatches", "steps"], sys.argv[1:]))))' \
    "$model" "$microbatch_size" "$microbatches" "$steps" > "$runs/config.json"

  # The schedules: NAME|the pp-run options that compile and run it besides
  # --stages 2 and --schedule NAME.
  local configs=("gpipe|" "1f1b|" "interleaved-1f1b|--virtual-stages 2"
                 "zb-h1|" "zb-v|")
  local line schedule options
  # Each schedule compiles its own package (its chunks, a split backward).
  # One that does not compile is left out of the runs; the table shows its
  # error.
  for line in "${configs[@]}"; do
    IFS='|' read -r schedule options <<< "$line"
    "$build/bin/pp-run" "$model" --stages 2 --schedule "$schedule" $options \
      --microbatch-size "$microbatch_size" --loss cross_entropy:output_0 \
      --input-shape "$inputs" --microbatches "$microbatches" \
      --cache-dir "$runs/$schedule" --print-schedule \
      > "$runs/compile-$schedule.log" 2>&1 ||
      { rm -rf "${runs:?}/$schedule"
        grep -m1 -v '^pp-run: error: cannot compile' "$runs/compile-$schedule.log" \
          > "$runs/$schedule.failed"; }
  done
  # The schedules alternating, each run with --trace (a few spans per
  # microbatch: its cost is not measurable at this size). A run that fails
  # is shown in the table with the end of rank 0's log.
  local r
  for r in $(seq "$repeats"); do
    for line in "${configs[@]}"; do
      IFS='|' read -r schedule options <<< "$line"
      [ -f "$runs/$schedule.failed" ] && continue
      ( run_pp "$runs" "$schedule" 2 "$schedule" "$schedule-r$r" "$steps" \
          --trace "$runs/$schedule-r$r.trace.json" ) 2> "$runs/$schedule-r$r.error" ||
        tail -n 3 "$runs/$schedule-r$r.rank0.log" > "$runs/$schedule.failed"
    done
  done
  uptime > "$runs/load-after"
  /usr/bin/python3 "$root/scripts/bench/schedules_table.py" "$runs" "$repeats"
}

# Starting pp's ranks by hand for scripts/bench.sh's peers and parallel
# sections (sourced; the caller sets build, peer_timeout, pp_threads and
# microbatches).

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits for the rank processes given; on a failure prints the logs given
# after `--` and exits.
wait_ranks() {
  local pids=() failed=0 pid
  while [ "$1" != -- ]; do pids+=("$1"); shift; done
  shift
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  if [ "$failed" = 1 ]; then
    echo "bench.sh: a rank failed; its logs:" >&2
    tail -n 20 "$@" >&2
    exit 1
  fi
}

# run_pp DIR CACHE RANKS SCHEDULE TAG STEPS [pp-run options]: one pp job of
# RANKS ranks on the package compiled into DIR/CACHE, its ranks started by
# hand so that /usr/bin/time gives each one's peak RSS (TAG.rankR.rss, in
# KB); rank 0 writes TAG.jsonl.
run_pp() {
  local dir="$1" cache="$2" ranks="$3" schedule="$4" tag="$5" steps="$6"
  shift 6
  local package
  package=$(dirname "$(find "$dir/$cache" -mindepth 2 -maxdepth 2 -name manifest.json)")
  local port secret rank pids=() logs=()
  port=$(free_port)
  secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  for rank in $(seq $((ranks - 1)) -1 0); do
    PP_JOB_SECRET=$secret RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=$ranks \
      LOCAL_WORLD_SIZE=$ranks MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
      timeout "$peer_timeout" /usr/bin/time -f %M -o "$dir/$tag.rank$rank.rss" \
      "$build/bin/pp-run" "$package" "${pp_threads[@]}" --schedule "$schedule" \
      --microbatches "$microbatches" --steps "$steps" --seed 1 --optimizer adamw \
      --lr 0.001 --metrics "$dir/$tag.jsonl" "$@" > "$dir/$tag.rank$rank.log" 2>&1 &
    pids+=($!) logs+=("$dir/$tag.rank$rank.log")
  done
  wait_ranks "${pids[@]}" -- "${logs[@]}"
}

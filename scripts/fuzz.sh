#!/usr/bin/env bash
# Builds the fuzz targets of test/Fuzz with clang 22, libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/ (override
# with PP_FUZZ_BUILD_DIR; only the fuzz targets and what they link are
# configured: PP_FUZZERS_ONLY), then fuzzes.
#
#   scripts/fuzz.sh [ci [SECONDS]]   the campaign CI runs (scripts/test.sh):
#                                    every target but torchscript for
#                                    SECONDS (default PP_FUZZ_SECONDS or
#                                    10), PP_JOBS (2) at a time
#   scripts/fuzz.sh all SECONDS      the long run: every target for SECONDS
#   scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAGS...]
#                                    one target, pp-fuzz-TARGET
#
# Targets: onnx, onnx-text, torchscript, package, parameter-file,
# token-dataset, safetensors, weights-index, checkpoint, schedule-file.
# CI leaves out torchscript: its LibTorch plugin is a fifth of the clang
# build (about 35 s of the 5 minutes CI may spend here), and in 10 s it
# runs few inputs (docs/development.md, Fuzzing).
# Only the selected targets are built.
# Each run starts from the target's seeds (test/Fuzz/corpus/TARGET) and
# fixed crashes (test/Fuzz/regressions/TARGET), which it reads and never
# writes, and grows its corpus in build-fuzz/corpus/TARGET (kept between
# runs). It stops at the first crash, leak, timeout (-timeout, 10 s) or
# allocation beyond -rss_limit_mb (2048 MB), whose input it writes to
# build-fuzz/crashes/TARGET/. The script prints a line per target
# (executions, executions per second, corpus size, crashes; the logs are in
# build-fuzz/logs/) and fails when any target crashed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${PP_JOBS:-2}"
targets=(onnx onnx-text torchscript package parameter-file token-dataset
         safetensors weights-index checkpoint schedule-file)

mode="${1:-ci}"
ci_flags=()
case "$mode" in
  ci) seconds="${2:-${PP_FUZZ_SECONDS:-10}}"
      # A fixed seed: a CI failure replays exactly (PP_FUZZ_SEED to vary).
      ci_flags=(-seed="${PP_FUZZ_SEED:-1}")
      selected=()
      for target in "${targets[@]}"; do
        [ "$target" = torchscript ] || selected+=("$target")
      done ;;
  all) seconds="${2:?usage: scripts/fuzz.sh all SECONDS}"
       selected=("${targets[@]}") ;;
  *)
    seconds="${2:?usage: scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAGS...]}"
    if [[ ! " ${targets[*]} " =~ " $mode " ]]; then
      echo "fuzz: unknown target '$mode' (expected ci, all or one of:" \
           "${targets[*]})" >&2
      exit 2
    fi
    selected=("$mode")
    jobs=1 ;;
esac
shift $(( $# < 2 ? $# : 2 ))
flags=("${ci_flags[@]}" "$@")

start=$SECONDS
"$root/scripts/setup.sh"
if [ ! -f "$build/build.ninja" ]; then
  # -O1 and line tables: what libFuzzer recommends, and a quick build.
  # Warnings are the GCC build's to check (clang's libstdc++ deprecation
  # warnings would fail it).
  CC=clang-22 CXX=clang++-22 cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    -DPP_ENABLE_CUDA=OFF -DPP_WARNINGS_AS_ERRORS=OFF -DPP_FUZZERS_ONLY=ON \
    -DPP_LIBFUZZER=ON -DPP_SANITIZE=address,undefined > /dev/null
fi
cmake --build "$build" --target "${selected[@]/#/pp-fuzz-}" -- -j "${PP_JOBS:-2}"
built=$SECONDS

# As in scripts/sanitize.sh: no false use-after-poison from MLIR's bump
# allocators, shared by instrumented headers and the uninstrumented library.
export ASAN_OPTIONS="${ASAN_OPTIONS:-allow_user_poisoning=0}"
# Leaks of the Debian libraries, not pp's (see the file).
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/test/Fuzz/lsan-suppressions.txt}"

# Fuzzes target $1 for $seconds; its log goes to logs/$1.log.
fuzz() {
  local target="$1"
  mkdir -p "$build/corpus/$target" "$build/crashes/$target" "$build/logs"
  "$build/bin/pp-fuzz-$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$target/" "${flags[@]}" \
    "$build/corpus/$target" "$root/test/Fuzz/corpus/$target" \
    "$root/test/Fuzz/regressions/$target" > "$build/logs/$target.log" 2>&1
}

# The report line of target $1 from its log, and whether it crashed ($2:
# its exit status).
report() {
  local target="$1" status="$2" log="$build/logs/$1.log"
  local runs rate corpus crashes
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  corpus=$(ls "$build/corpus/$target" | wc -l)
  crashes=$(ls "$build/crashes/$target" | wc -l)
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes=1 # exited abnormally without an artifact
  fi
  printf '%-16s %12s %9s %8s %8s\n' "$target" "${runs:-?}" "${rate:-?}" \
    "$corpus" "$crashes"
  [ "$crashes" -eq 0 ]
}

# Each target's crashes are those of this run.
for target in "${selected[@]}"; do
  rm -rf "$build/crashes/$target"
done
declare -A status
running=()
for target in "${selected[@]}"; do
  fuzz "$target" & running+=("$!:$target")
  if [ "${#running[@]}" -ge "$jobs" ]; then
    entry="${running[0]}"; running=("${running[@]:1}")
    wait "${entry%%:*}" && status[${entry#*:}]=0 || status[${entry#*:}]=$?
  fi
done
for entry in "${running[@]}"; do
  wait "${entry%%:*}" && status[${entry#*:}]=0 || status[${entry#*:}]=$?
done

printf '%-16s %12s %9s %8s %8s\n' target executions exec/s corpus crashes
failed=()
for target in "${selected[@]}"; do
  report "$target" "${status[$target]}" || failed+=("$target")
done
echo "fuzz: ${#selected[@]} targets, ${seconds} s each, $jobs at a time;" \
     "build $((built - start)) s, total $((SECONDS - start)) s"
if [ "${#failed[@]}" -gt 0 ]; then
  for target in "${failed[@]}"; do
    echo "fuzz: pp-fuzz-$target crashed; its log:" \
         "$build/logs/$target.log, input: $build/crashes/$target/" >&2
    grep -m 3 -E '^(==[0-9]+==ERROR|SUMMARY|pp-fuzz:)|runtime error' \
      "$build/logs/$target.log" >&2 || true
  done
  exit 1
fi

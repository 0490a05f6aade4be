#!/usr/bin/env bash
# Builds the fuzz targets of test/Fuzz with clang 22, libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/ (override
# with PP_FUZZ_BUILD_DIR), then fuzzes.
#
#   scripts/fuzz.sh                  each target's lit test: its seed corpus
#                                    and fixed crashes, then 3 s of mutation
#   scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAGS...]
#                                    a long run of pp-fuzz-TARGET (onnx,
#                                    onnx-text, package, parameter-file,
#                                    token-dataset)
#
# A long run grows its corpus in build-fuzz/corpus/TARGET (kept between
# runs; the seeds in test/Fuzz/corpus/TARGET are read, never written) and
# writes crashing inputs to build-fuzz/crashes/TARGET/.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_FUZZ_BUILD_DIR:-$root/build-fuzz}"
targets=(onnx onnx-text package parameter-file token-dataset)

"$root/scripts/setup.sh" fuzz
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-22 CXX=clang++-22 cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPP_ENABLE_CUDA=OFF \
    -DPP_LIBFUZZER=ON -DPP_SANITIZE=address,undefined
fi
cmake --build "$build" --target PPFuzzers -- -j "${PP_JOBS:-2}"

# As in scripts/sanitize.sh: no false use-after-poison from MLIR's bump
# allocators, shared by instrumented headers and the uninstrumented library.
export ASAN_OPTIONS="${ASAN_OPTIONS:-allow_user_poisoning=0}"

if [ "$#" -eq 0 ]; then
  exec "$(command -v lit || echo /usr/lib/llvm-22/bin/lit)" -sv "$build/test/Fuzz"
fi

target="$1"
seconds="${2:?usage: scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAGS...]}"
shift 2
if [[ ! " ${targets[*]} " =~ " $target " ]]; then
  echo "fuzz: unknown target '$target' (expected one of: ${targets[*]})" >&2
  exit 2
fi
mkdir -p "$build/corpus/$target" "$build/crashes/$target"
exec "$build/bin/pp-fuzz-$target" -max_total_time="$seconds" \
  -print_final_stats=1 -artifact_prefix="$build/crashes/$target/" "$@" \
  "$build/corpus/$target" "$root/test/Fuzz/corpus/$target" \
  "$root/test/Fuzz/regressions/$target"

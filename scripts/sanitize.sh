#!/usr/bin/env bash
# Builds pp with sanitizers in a build directory of its own and runs tests
# there (after scripts/setup.sh):
#
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer
#                              in build-asan/: all of check-pp
#   scripts/sanitize.sh tsan   ThreadSanitizer in build-tsan/: the runtime
#                              unit tests (PPRuntimeTests: communicators,
#                              the rendezvous store, the trainer's threads)
#
# Only pp's own code is instrumented: the Debian libraries (MLIR/LLVM,
# LibTorch, OpenBLAS, protobuf, ONNX) are not, nor the stage libraries
# that pp-opt compiles at test time with plain `c++ -O2` (see
# docs/development.md). Any sanitizer report fails the run. Override the
# build directory with PP_SANITIZE_BUILD_DIR and the parallelism with
# PP_JOBS (default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kind="${1:-}"
case "$kind" in
  asan) sanitizers=address,undefined ;;
  tsan) sanitizers=thread ;;
  *) echo "usage: scripts/sanitize.sh asan|tsan" >&2; exit 2 ;;
esac
build="${PP_SANITIZE_BUILD_DIR:-$root/build-$kind}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPP_ENABLE_CUDA=OFF -DPP_SANITIZE="$sanitizers"
fi

export UBSAN_OPTIONS=print_stacktrace=1
# allow_user_poisoning=0: LLVM's allocator headers, inlined into pp's
# instrumented code, poison the free part of MLIR's bump allocators, which
# the uninstrumented libMLIR.so then allocates from without unpoisoning
# (a false use-after-poison).
export ASAN_OPTIONS=detect_stack_use_after_return=1:strict_string_checks=1:allow_user_poisoning=0
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

if [ "$kind" = asan ]; then
  cmake --build "$build" --target check-pp -- -j "${PP_JOBS:-2}"
else
  cmake --build "$build" --target PPRuntimeTests -- -j "${PP_JOBS:-2}"
  "$build/test/Unit/PPRuntimeTests"
fi

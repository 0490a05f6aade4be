#!/usr/bin/env bash
# Configures and builds pp in build/ (override with PP_BUILD_DIR).
# Run scripts/setup.sh first on a fresh machine.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build"

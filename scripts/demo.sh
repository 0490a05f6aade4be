#!/usr/bin/env bash
# The README's main command: sets up, builds, and runs pp-opt on the bundled
# two-stage pipeline example, printing the verified program.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
"$root/scripts/build.sh"
"$build/bin/pp-opt" "$root/docs/examples/mlp-two-stages.mlir"

#!/usr/bin/env bash
# Sets up, builds and runs every test (lit FileCheck tests and GoogleTest unit
# tests), then prints "N passed, N failed"; then a short fuzz campaign of
# every fuzz target (scripts/fuzz.sh ci: a clang libFuzzer build in
# build-fuzz/, 10 s a target; PP_FUZZ=0 skips it). This is the README's test
# command and what CI runs.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
"$root/scripts/build.sh"

results="$build/test/results.json"
rm -f "$results"
status=0
cmake --build "$build" --target check-pp || status=$?
[ -f "$results" ] || { echo "no test results: the build failed" >&2; exit 1; }

/usr/bin/python3 - "$results" <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
codes = [t["code"] for t in tests]
passed = codes.count("PASS")
skipped = codes.count("UNSUPPORTED")
failed = len(codes) - passed - skipped
print(f"{passed} passed, {failed} failed" +
      (f", {skipped} skipped" if skipped else ""))
PY
if [ "${PP_FUZZ:-1}" != 0 ]; then
  "$root/scripts/fuzz.sh" ci || status=1
fi
exit "$status"

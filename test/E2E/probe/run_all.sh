#!/bin/sh
# Runs every probe of issue 10's features (not wired into lit):
#   test/E2E/probe/run_all.sh BUILD_DIR WORK_DIR
set -e
here=$(dirname "$0")
for probe in acceptance eval_padding epoch_order dropout_layouts; do
  echo "### $probe"
  /usr/bin/python3 "$here/$probe.py" "$1" "$2" 2>&1 | grep -v "Warning\|^  "
done

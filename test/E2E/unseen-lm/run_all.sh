#!/bin/sh
# Runs every probe of issue 10's features (test/E2E/unseen-lm.test); exits 1
# when one fails. PyTorch's tracer warnings (stderr) are dropped.
#   test/E2E/unseen-lm/run_all.sh BUILD_DIR WORK_DIR
here=$(dirname "$0")
status=0
for probe in acceptance eval_padding epoch_order dropout_layouts; do
  echo "### $probe"
  /usr/bin/python3 "$here/$probe.py" "$1" "$2" 2>/dev/null || status=1
done
exit $status

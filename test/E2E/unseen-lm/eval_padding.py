#!/usr/bin/python3
"""Eval loss at step 0 on eval sets smaller than one global batch (padding
masked) and --eval-batches past the data, against PyTorch on the same
windows. Run after acceptance.py has filled WORK_DIR.

    /usr/bin/python3 eval_padding.py BUILD_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import acceptance  # noqa: E402

build, work, model = acceptance.initial_model(sys.argv)
evals = acceptance.tokens_of(os.path.join(work, "eval.ppd"))
bad = 0
# (eval tokens, stages, dp, microbatches, schedule, --eval-batches)
for tokens, stages, dp, micro, schedule, batches in [
        (17, 2, 2, 2, "1f1b", 0), (17, 1, 4, 1, "gpipe", 0),
        (81, 2, 2, 2, "gpipe", 0), (81, 2, 2, 2, "1f1b", 5),
        (16 * 21 + 1, 2, 2, 3, "1f1b", 0), (16 * 21 + 5, 4, 1, 3, "gpipe", 9),
        (16 * 40 + 1, 1, 3, 3, "1f1b", 2)]:
    path = os.path.join(work, "eval%d.u16" % tokens)
    evals[:tokens].astype(np.uint16).tofile(path)
    windows = (tokens - 1) // 16
    global_batch = 4 * micro * dp
    used = windows if batches == 0 else min(windows, batches * global_batch)
    expected = acceptance.torch_loss(model, evals, range(used))
    metrics = os.path.join(work, "evalpad.jsonl")
    cmd = [os.path.join(build, "bin/pp-run"),
           os.path.join(work, "probe-lm.pt"), "--input-shape",
           "tokens=?x16xi64", "--loss", "cross_entropy:output_0", "--stages",
           str(stages), "--dp", str(dp), "--microbatch-size", "4",
           "--microbatches", str(micro), "--schedule", schedule, "--steps",
           "1", "--data", os.path.join(work, "train.ppd"), "--eval-data",
           path, "--token-width", "2", "--eval-batches", str(batches),
           "--metrics", metrics, "--timeout", "60"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        print("FAIL", tokens, stages, dp, micro, schedule, batches,
              done.stderr[-400:])
        bad += 1
        continue
    rows = [json.loads(x) for x in open(metrics) if "eval_loss" in x]
    got, count = rows[0]["eval_loss"], rows[0]["eval_tokens"]
    ok = abs(got - expected) <= 1e-5 * expected and count == used * 16
    bad += not ok
    print("%s windows=%d pp%d dp%d m%d %s eval-batches=%d: pp %.7f (%d "
          "tokens) PyTorch %.7f (%d tokens)" % (
              "ok  " if ok else "FAIL", windows, stages, dp, micro, schedule,
              batches, got, count, expected, used * 16))
sys.exit(1 if bad else 0)

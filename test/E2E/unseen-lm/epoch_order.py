#!/usr/bin/python3
"""Training order across epoch boundaries, checked through the losses: with
--lr 0 every step's loss is the initial model's loss on that step's
samples, which PyTorch computes on TrainingSampler's order (pp_sampler.py)
over a tiny dataset whose epochs end inside steps. Run after acceptance.py.

    /usr/bin/python3 epoch_order.py BUILD_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import acceptance  # noqa: E402
import pp_sampler  # noqa: E402

build, work, model = acceptance.initial_model(sys.argv)
train = acceptance.tokens_of(os.path.join(work, "train.ppd"))
bad = 0
STEPS, SEED = 9, 11
# (windows, stages, dp, microbatch size, microbatches, schedule, order)
for windows, stages, dp, mb, micro, schedule, order in [
        (7, 1, 1, 4, 3, "1f1b", "pp,dp"), (7, 2, 3, 2, 1, "gpipe", "dp,pp"),
        (7, 2, 3, 2, 1, "1f1b", "pp,dp"), (5, 3, 1, 1, 5, "gpipe", "pp,dp"),
        (13, 2, 2, 1, 3, "1f1b", "dp,pp")]:
    path = os.path.join(work, "tiny%d.u16" % windows)
    train[:windows * 16 + 1].astype(np.uint16).tofile(path)
    gb = mb * micro * dp
    metrics = os.path.join(work, "epoch.jsonl")
    cmd = [os.path.join(build, "bin/pp-run"),
           os.path.join(work, "probe-lm.pt"), "--input-shape",
           "tokens=?x16xi64", "--loss", "cross_entropy:output_0", "--stages",
           str(stages), "--dp", str(dp), "--mesh-order", order,
           "--microbatch-size", str(mb), "--microbatches", str(micro),
           "--schedule", schedule, "--steps", str(STEPS), "--lr", "0",
           "--optimizer", "adamw", "--seed", str(SEED), "--data", path,
           "--token-width", "2", "--metrics", metrics, "--timeout", "60"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        print("FAIL", windows, stages, dp, done.stderr[-400:])
        bad += 1
        continue
    got = [json.loads(x)["loss"] for x in open(metrics) if '"loss"' in x]
    want = [acceptance.torch_loss(model, train, pp_sampler.training_step(
        SEED, windows, s, gb)) for s in range(STEPS)]
    rel = max(abs(a - b) / b for a, b in zip(got, want))
    ok = len(got) == STEPS and rel < 2e-6
    bad += not ok
    print("%s N=%d pp%d dp%d b%d m%d %s %s (%d epochs): max rel diff to "
          "PyTorch %.2e" % ("ok  " if ok else "FAIL", windows, stages, dp, mb,
                            micro, schedule, order, STEPS * gb / windows,
                            rel))
sys.exit(1 if bad else 0)

#!/usr/bin/python3
"""The probe LM with dropout 0.1 after attention and MLP (ONNX exported in
training mode): training losses must still be equal across pp x dp layouts
(dropout masks keyed by global sample, not by rank), and eval must run with
dropout off (eval at step 0 equal to PyTorch's eval-mode loss).

    /usr/bin/python3 dropout_layouts.py BUILD_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import acceptance  # noqa: E402
import make_probe_lm as lm  # noqa: E402

build, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
os.environ["PP_CACHE_DIR"] = os.path.join(work, "cache")


class DropBlock(lm.Block):
    def forward(self, x):
        b, t, c = x.shape
        h = self.n1(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q.reshape(b, t, lm.HEADS, c // lm.HEADS).permute(0, 2, 1, 3)
        k = k.reshape(b, t, lm.HEADS, c // lm.HEADS).permute(0, 2, 3, 1)
        v = v.reshape(b, t, lm.HEADS, c // lm.HEADS).permute(0, 2, 1, 3)
        s = torch.matmul(q, k) / 4.0
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        y = torch.matmul(torch.softmax(s.masked_fill(causal, -1e9), -1), v)
        y = y.permute(0, 2, 1, 3).reshape(b, t, c)
        x = x + lm.RESIDUAL * F.dropout(self.o(y), 0.1, self.training)
        return x + lm.RESIDUAL * F.dropout(
            self.down(F.silu(self.up(self.n2(x)))), 0.1, self.training)


lm.Block = DropBlock
model = lm.build()
path = os.path.join(work, "probe-drop.onnx")
torch.onnx.export(model.train(), (torch.zeros(2, 16, dtype=torch.long),),
                  path, opset_version=17, input_names=["tokens"],
                  output_names=["logits"], dynamic_axes={"tokens": {0: "b"}},
                  training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False)
model.eval()
evals = acceptance.tokens_of(os.path.join(work, "eval.ppd"))
expected = acceptance.torch_loss(model, evals, range(16))
print("PyTorch eval-mode loss on eval windows 0..15: %.7f" % expected)
base = None
bad = 0
for name, extra in [("pp1xdp1", ["--microbatches", "4"]),
                    ("pp2xdp2", ["--stages", "2", "--dp", "2",
                                 "--microbatches", "2"]),
                    ("pp4xdp1 dp,pp", ["--stages", "4", "--microbatches",
                                       "4", "--mesh-order", "dp,pp"])]:
    metrics = os.path.join(work, "drop.jsonl")
    done = subprocess.run(
        [os.path.join(build, "bin/pp-run"), path, "--loss",
         "cross_entropy:logits", "--microbatch-size", "4", "--steps", "4",
         "--optimizer", "adamw", "--lr", "0.003", "--data",
         os.path.join(work, "train.ppd"), "--eval-data",
         os.path.join(work, "eval.ppd"), "--eval-batches", "1",
         "--metrics", metrics, "--timeout", "60"] + extra,
        capture_output=True, text=True)
    if done.returncode:
        print(name, "FAILED", done.stderr[-600:])
        bad += 1
        continue
    rows = [json.loads(x) for x in open(metrics)]
    losses = [r["loss"] for r in rows if "loss" in r]
    ev0 = rows[0].get("eval_loss")
    base = base or losses
    rel = max(abs(a - b) / b for a, b in zip(losses, base))
    bad += rel > 1e-5 or abs(ev0 - expected) > 1e-5 * expected
    print("%-14s losses %s max rel %.1e eval@0 %.7f (PyTorch eval mode "
          "%.7f)" % (name, " ".join("%.6f" % x for x in losses), rel, ev0,
                     expected))
sys.exit(1 if bad else 0)

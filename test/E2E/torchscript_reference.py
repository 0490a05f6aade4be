#!/usr/bin/python3
"""Checks pp-torch-reference on a TorchScript model against PyTorch in Python.

Usage: torchscript_reference.py MODEL KIND:OUTPUT MICROBATCH_SIZE
                                MICROBATCHES SEED METRICS GRADS INPUT...

Each INPUT is NAME=TYPE (`?x5xi64`, `?x3xf32`; ? is the microbatch size),
with `:BOUND` after an integer type: the ids are below BOUND. Draws pp-run's
synthetic data for step 1 (onnx_reference.synthetic), runs the module in
float64 with Python's autograd, and checks the step's token-weighted loss
(METRICS, pp-torch-reference's) and the first step's gradients (GRADS, its
--save-grads) to a relative 1e-5 of each tensor's largest magnitude.
Prints one line.
"""
import json
import sys

import numpy as np
import torch

from onnx_reference import pad_labels, synthetic
from parameter_file import read_parameters

TOLERANCE = 1e-5

(model_path, loss, microbatch_size, microbatches, seed, metrics_path,
 grads_path) = sys.argv[1:8]
kind, output = loss.split(":")
microbatch_size, microbatches, seed = (int(microbatch_size),
                                       int(microbatches), int(seed))
inputs = []
for spec in sys.argv[8:]:
    name, text = spec.split("=")
    text, _, bound = text.partition(":")
    *dims, element = text.split("x")
    shape = [microbatch_size if d == "?" else int(d) for d in dims]
    inputs.append((name, shape, element, int(bound or 0)))

model = torch.jit.load(model_path).double().eval()
parameters = dict(model.named_parameters())
step_loss, count = 0.0, 0
losses = []
for mb in range(microbatches):
    first = mb * microbatch_size
    args = []
    for name, shape, element, bound in inputs:
        values = synthetic(seed, name, shape, first, bound)
        args.append(torch.tensor(values, dtype=torch.int64 if element == "i64"
                                 else torch.float64))
    result = model(*args)
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    y = outputs[int(output.removeprefix("output_"))]
    if kind == "mse":
        labels = torch.tensor(synthetic(seed, "labels", list(y.shape), first))
        losses.append(((y - labels) ** 2).sum())
        count += labels.numel()
    else:
        labels = torch.tensor(pad_labels(
            synthetic(seed, "labels", list(y.shape[:-1]), first, y.shape[-1]),
            first))
        losses.append(torch.nn.functional.cross_entropy(
            y.reshape(-1, y.shape[-1]), labels.reshape(-1), reduction="sum",
            ignore_index=-100))
        count += int((labels != -100).sum())
total = sum(losses) / count
total.backward()

with open(metrics_path) as f:
    reported = json.loads(f.readline())["loss"]
if abs(reported - total.item()) > TOLERANCE * abs(total.item()):
    sys.exit(f"loss {reported} vs PyTorch's {total.item()}")
saved = read_parameters(grads_path)
expected = {n: p.grad.numpy() for n, p in parameters.items()
            if p.grad is not None}
if saved.keys() != expected.keys():
    sys.exit(f"gradients of {sorted(saved)}, PyTorch has {sorted(expected)}")
worst = 0.0
for name, grad in expected.items():
    scale = max(1e-6, float(np.abs(grad).max()))
    worst = max(worst, float(np.abs(saved[name] - grad).max()) / scale)
if worst > TOLERANCE:
    sys.exit(f"gradients differ from PyTorch's by up to {worst:.3g}")
print(f"loss and {len(expected)} gradients match PyTorch within {TOLERANCE:g}")

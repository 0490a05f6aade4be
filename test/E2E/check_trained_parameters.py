#!/usr/bin/python3
"""Checks which parameters a pp-run training run changed.

Usage: check_trained_parameters.py MODEL.onnx METRICS PARAMS UNCHANGED_REGEX

PARAMS (pp-run --save-params) must hold every float initializer of the
model, with its shape; METRICS' params_sha256 must be the digest of exactly
those values (so it covers every parameter). Parameters whose whole name
matches UNCHANGED_REGEX must still hold their initial values from the model,
bit for bit; every other one must have changed. Prints the unchanged names
and the count of changed ones; exits non-zero on the first violation.
"""
import json
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from parameter_file import params_sha256, read_parameters

model_path, metrics_path, params_path, unchanged = sys.argv[1:5]
initial = {
    tensor.name: numpy_helper.to_array(tensor)
    for tensor in onnx.load(model_path).graph.initializer
    if tensor.data_type == onnx.TensorProto.FLOAT
}
saved = read_parameters(params_path)
if saved.keys() != initial.keys():
    sys.exit(f"saved parameters {sorted(saved)} are not the model's "
             f"{sorted(initial)}")
with open(metrics_path) as f:
    digests = [r["params_sha256"] for r in map(json.loads, f)
               if "params_sha256" in r]
if digests != [params_sha256(saved)]:
    sys.exit(f"params_sha256 {digests} is not the digest of the saved "
             f"parameters, {params_sha256(saved)}")

kept, changed = [], []
for name, start in initial.items():
    if saved[name].shape != start.shape:
        sys.exit(f"{name}: shape {saved[name].shape}, in the model "
                 f"{start.shape}")
    same = saved[name].tobytes() == start.astype("<f4").tobytes()
    if re.fullmatch(unchanged, name):
        if not same:
            sys.exit(f"{name} changed, but it should keep its initial value")
        kept.append(name)
    elif same:
        sys.exit(f"{name} kept its initial value, but it should be trained")
    else:
        changed.append(name)
print(f"unchanged: {', '.join(sorted(kept))}")
print(f"changed: {len(changed)} parameters")
print(f"params_sha256 covers all {len(saved)} parameters")

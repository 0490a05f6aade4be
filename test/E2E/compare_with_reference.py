#!/usr/bin/python3
"""Compares a pp-run training run with pp-torch-reference's.

Usage: compare_with_reference.py PP_METRICS PP_PARAMS TORCH_METRICS TORCH_PARAMS

The tolerance README.md states: per step, loss and grad_norm agree to a
relative TOLERANCE (1e-5); the trained parameters (runtime/checkpoints/ParameterFile.h
format) have the same names and shapes and agree to TOLERANCE times the
tensor's largest magnitude (at least 1). Both compute in float32 with
different kernels and summation orders, so equality is not bitwise; the
tests' runs (up to 5 SGD or AdamW steps) stay below 3e-6.
"""
import json
import sys

import numpy as np

from parameter_file import read_parameters

TOLERANCE = 1e-5


def steps(path):
    with open(path) as f:
        return [r for r in map(json.loads, f) if "step" in r]


pp_steps, torch_steps = steps(sys.argv[1]), steps(sys.argv[3])
if len(pp_steps) != len(torch_steps):
    sys.exit("different step counts")
worst_step = 0.0
for mine, theirs in zip(pp_steps, torch_steps):
    for key in ("loss", "grad_norm"):
        difference = abs(mine[key] - theirs[key]) / abs(theirs[key])
        if difference > TOLERANCE:
            sys.exit(f"step {mine['step']}: {key} {mine[key]} vs "
                     f"{theirs[key]} (relative difference {difference:.3g} "
                     f"above {TOLERANCE:g})")
        worst_step = max(worst_step, difference)
pp_params = read_parameters(sys.argv[2])
torch_params = read_parameters(sys.argv[4])
if pp_params.keys() != torch_params.keys():
    sys.exit(f"different parameters: {sorted(pp_params)} vs {sorted(torch_params)}")
worst = 0.0
for name, value in pp_params.items():
    reference = torch_params[name]
    if value.shape != reference.shape:
        sys.exit(f"{name}: shape {value.shape} vs {reference.shape}")
    scale = max(1.0, float(np.abs(reference).max()))
    worst = max(worst, float(np.abs(value - reference).max()) / scale)
if worst > TOLERANCE:
    sys.exit(f"parameters differ by up to {worst:.3g} (relative), above "
             f"{TOLERANCE:g}")
print(f"{len(pp_steps)} steps and {len(pp_params)} parameters agree within "
      f"a relative {TOLERANCE:g} (worst step difference {worst_step:.1e}, "
      f"worst parameter difference {worst:.1e})")

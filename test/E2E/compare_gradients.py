#!/usr/bin/python3
"""Compares the gradients of pp-run --save-grads with pp-torch-reference's.

Usage: compare_gradients.py [--tolerance X] PP_GRADS TORCH_GRADS

Both files (runtime/checkpoints/ParameterFile.h format) hold the first
step's gradient of every parameter the loss depends on, summed over the
step's microbatches, before clipping. They must name the same parameters
with the same shapes, and each gradient must agree with LibTorch's within
the tolerance (1e-4, issue 9; --tolerance sets another, as for two runs
in bf16) relative to the tensor's largest magnitude, floored at FLOOR: a
gradient that is zero up to rounding in both (below 1e-6
everywhere) compares absolutely, not relative to its own rounding noise.
Prints one line: the count, the worst relative difference and its
parameter.
"""
import argparse
import sys

import numpy as np

from parameter_file import read_parameters

FLOOR = 1e-6

parser = argparse.ArgumentParser()
parser.add_argument("--tolerance", type=float, default=1e-4)
parser.add_argument("pp_grads")
parser.add_argument("torch_grads")
args = parser.parse_args()
TOLERANCE = args.tolerance
pp_grads = read_parameters(args.pp_grads)
torch_grads = read_parameters(args.torch_grads)
if pp_grads.keys() != torch_grads.keys():
    only_pp = sorted(pp_grads.keys() - torch_grads.keys())
    only_torch = sorted(torch_grads.keys() - pp_grads.keys())
    sys.exit(f"different parameters: only pp has {only_pp}, only LibTorch "
             f"has {only_torch}")
if not pp_grads:
    sys.exit("no gradients to compare")
worst, worst_name, failures = 0.0, "", []
for name in sorted(pp_grads):
    mine, reference = pp_grads[name], torch_grads[name]
    if mine.shape != reference.shape:
        sys.exit(f"{name}: shape {mine.shape} vs {reference.shape}")
    if not np.isfinite(mine).all():
        failures.append(f"{name}: pp's gradient is not finite")
        continue
    scale = max(FLOOR, float(np.abs(reference).max()))
    difference = float(np.abs(mine - reference).max()) / scale
    if difference > TOLERANCE:
        failures.append(f"{name}: relative difference {difference:.3g}")
    if difference >= worst:
        worst, worst_name = difference, name
if failures:
    sys.exit(f"{len(failures)} of {len(pp_grads)} gradients differ by more "
             f"than {TOLERANCE:g}: " + "; ".join(failures))
print(f"{len(pp_grads)} gradients agree within a relative {TOLERANCE:g} "
      f"(worst {worst:.1e} in {worst_name})")

#!/usr/bin/python3
"""Prints, per pipeline rank of a pp-run --profile file, the conversions
of its weights per step.

Usage: count_conversions.py PROFILE_JSON

For each rank: `compute_copy_conversions` (the weights the runtime
converted into their compute copies, docs/precision.md) and the calls of
the `cast` kernel inside the stage functions, both per step (the run's
totals over its step count, exact), and the bytes of the copies per step.
"""
import json
import sys

with open(sys.argv[1]) as f:
    profile = json.load(f)
steps = profile["steps"]
for stage in profile["stages"]:
    casts = stage["ops"].get("cast", {}).get("calls", 0)
    copies = stage["compute_copy_conversions"]
    copy_bytes = stage["compute_copy_bytes"]
    if casts % steps or copies % steps or copy_bytes % steps:
        sys.exit(f"{sys.argv[1]}: rank {stage['stage']}: {casts} casts, "
                 f"{copies} conversions, {copy_bytes} bytes over {steps} "
                 "steps are no whole number per step")
    print(f"rank {stage['stage']}: {copies // steps} compute copies "
          f"({copy_bytes // steps} bytes), {casts // steps} casts per step")

#!/usr/bin/python3
"""Checks that pp-run metrics files agree bit for bit.

Usage: compare_runs.py METRICS...

Every file must hold the same per-step loss and grad_norm (as written, so
bit for bit) and the same final params_sha256; samples_per_s may differ.
Prints one line per file and exits non-zero on the first disagreement.
"""
import json
import sys


def summary(path):
    steps, digest = [], None
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "params_sha256" in record:
                digest = record["params_sha256"]
            else:
                steps.append((record["step"], record["loss"],
                              record["grad_norm"]))
    return steps, digest


reference = None
for path in sys.argv[1:]:
    steps, digest = summary(path)
    if not steps or digest is None:
        sys.exit(f"{path}: no steps or no params_sha256")
    if reference is None:
        reference = (path, steps, digest)
    elif (steps, digest) != reference[1:]:
        sys.exit(f"{path} differs from {reference[0]}:\n"
                 f"  {steps} {digest}\n  {reference[1]} {reference[2]}")
    print(f"same {digest} {len(steps)} steps")

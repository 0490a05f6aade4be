#!/usr/bin/python3
"""Checks the breakdowns of a pp-run --profile file and prints which parts
each rank's steps spent time in.

Usage: check_breakdown.py PROFILE_JSON

Fails unless every stage entry has a breakdown of the seven parts, each a
non-negative time whose share is its fraction of the rank's step seconds,
the parts add up to the step and the shares to 100%. Prints one line per
entry: its stage, its rank and, for attention, communication and waiting,
whether the rank spent time in it.
"""
import json
import math
import sys

PARTS = ["gemm", "attention", "other_kernels", "communication", "waiting",
         "optimizer", "rest"]

with open(sys.argv[1]) as f:
    profile = json.load(f)


def check(condition, message):
    if not condition:
        sys.exit(f"{sys.argv[1]}: {message}")


for entry in profile["stages"]:
    where = f"stage {entry['stage']}"
    breakdown = entry.get("breakdown")
    check(breakdown is not None, f"{where}: no breakdown")
    step = breakdown["step_seconds"]
    check(step > 0, f"{where}: step_seconds {step}")
    check(sorted(breakdown["seconds"]) == sorted(PARTS)
          and sorted(breakdown["share"]) == sorted(PARTS),
          f"{where}: the parts are {sorted(breakdown['seconds'])}")
    for part in PARTS:
        seconds, share = breakdown["seconds"][part], breakdown["share"][part]
        check(seconds >= 0, f"{where}: {part} took {seconds} s")
        check(math.isclose(share, seconds / step, rel_tol=1e-9, abs_tol=1e-12),
              f"{where}: {part}'s share {share} is not {seconds} / {step}")
    total = sum(breakdown["seconds"].values())
    check(math.isclose(total, step, rel_tol=1e-6),
          f"{where}: the parts add up to {total} s, the step took {step} s")
    shares = sum(breakdown["share"].values())
    check(math.isclose(shares, 1.0, rel_tol=1e-6),
          f"{where}: the shares add up to {100 * shares}%")
    spent = ", ".join(f"{part} {'yes' if breakdown['seconds'][part] > 0 else 'no'}"
                      for part in ("attention", "communication", "waiting"))
    print(f"{where} rank {entry['rank']}: {spent}")

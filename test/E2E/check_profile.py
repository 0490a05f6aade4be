#!/usr/bin/python3
"""Checks a pp-run --profile file and prints what it holds.

Usage: check_profile.py PROFILE_JSON

Fails unless every time is a non-negative number, every count a positive
integer, each stage's op_seconds is the sum of its kinds' seconds and the
stages are numbered 0, 1, ... in order. Prints the step count, then one line
per stage: its number and its op kinds in name order.
"""
import json
import math
import sys

with open(sys.argv[1]) as f:
    profile = json.load(f)


def check(condition, message):
    if not condition:
        sys.exit(f"{sys.argv[1]}: {message}")


def seconds(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


check(isinstance(profile.get("steps"), int) and profile["steps"] >= 1,
      "no step count")
check(seconds(profile.get("step_seconds")), "step_seconds is not a time")
print(f"steps {profile['steps']}")
for index, stage in enumerate(profile["stages"]):
    check(stage["stage"] == index, f"stage {index} is numbered {stage['stage']}")
    total = 0.0
    for kind, totals in stage["ops"].items():
        check(seconds(totals["seconds"]), f"stage {index} {kind}: bad seconds")
        check(isinstance(totals["calls"], int) and totals["calls"] > 0,
              f"stage {index} {kind}: bad call count")
        total += totals["seconds"]
    check(math.isclose(total, stage["op_seconds"], rel_tol=1e-9, abs_tol=1e-12),
          f"stage {index}: op_seconds {stage['op_seconds']} is not the sum "
          f"{total}")
    print(f"stage {index}: {' '.join(sorted(stage['ops']))}")

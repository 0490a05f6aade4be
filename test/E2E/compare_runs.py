#!/usr/bin/python3
"""Checks that pp-run metrics files agree.

Usage: compare_runs.py [--rtol X] METRICS...

Without --rtol, every file must hold the same per-step loss and grad_norm
(as written, so bit for bit), the same eval losses and the same final
params_sha256. With --rtol, losses, gradient norms and eval losses must
agree within relative X (for runs whose order of additions differs, such
as data-parallel sums) and the parameters are not compared. Rates and the
per-rank lines may differ. Prints one line per file and exits non-zero on
the first disagreement.
"""
import argparse
import json
import sys


def summary(path):
    steps, evals, digest = [], [], None
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "params_sha256" in record:
                digest = record["params_sha256"]
            elif "step" in record:
                steps.append((record["step"], record["loss"],
                              record["grad_norm"]))
            elif "eval_loss" in record:
                evals.append((record["eval_after_step"], record["eval_loss"]))
    return steps, evals, digest


def relative(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def largest_difference(run, reference):
    """The largest relative difference of the values of two summaries, or
    None when their steps do not line up."""
    worst = 0.0
    for mine, theirs in ((run[0], reference[0]), (run[1], reference[1])):
        if [r[0] for r in mine] != [r[0] for r in theirs]:
            return None
        for a, b in zip(mine, theirs):
            for x, y in zip(a[1:], b[1:]):
                worst = max(worst, relative(x, y))
    return worst


parser = argparse.ArgumentParser()
parser.add_argument("--rtol", type=float)
parser.add_argument("metrics", nargs="+")
args = parser.parse_args()
reference = None
for path in args.metrics:
    run = summary(path)
    if not run[0] or run[2] is None:
        sys.exit(f"{path}: no steps or no params_sha256")
    if reference is None:
        reference = (path, run)
    if args.rtol is None:
        if run != reference[1]:
            sys.exit(f"{path} differs from {reference[0]}:\n"
                     f"  {run}\n  {reference[1]}")
        print(f"same {run[2]} {len(run[0])} steps")
        continue
    worst = largest_difference(run, reference[1])
    if worst is None or worst > args.rtol:
        sys.exit(f"{path} differs from {reference[0]} beyond {args.rtol}:\n"
                 f"  {run}\n  {reference[1]}")
    print(f"close {len(run[0])} steps {len(run[1])} evals "
          f"within {args.rtol}")

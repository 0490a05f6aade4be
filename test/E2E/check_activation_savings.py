#!/usr/bin/python3
"""Checks that a run holds at most a share of another's activation memory.

Usage: check_activation_savings.py BASELINE.jsonl RUN.jsonl MAX_SHARE [--split]

Reads the per-rank line ("ranks") of both metrics files. For every rank,
RUN's measured_activation_bytes (the most saved values it held at once in
a training step) must be at most MAX_SHARE of BASELINE's, and each run's
activation_bytes (the prediction: each stage's saved bytes per microbatch
times the microbatches its schedule keeps in flight) must equal its
measured one, except with --split: under a split backward (zb-h1, zb-v)
activation_bytes leaves out what the input half hands the weight half,
which the predicted peak (check_predicted_memory.py) counts. Prints one
line per rank with both figures and the share.
"""
import sys

from rank_figures import rank_figures

baseline_path, run_path, max_share = sys.argv[1], sys.argv[2], float(sys.argv[3])
split = sys.argv[4:] == ["--split"]
baseline = {rank["rank"]: rank for rank in rank_figures(baseline_path)}
for rank in rank_figures(run_path):
    before = baseline[rank["rank"]]
    for figures in () if split else (before, rank):
        if figures["activation_bytes"] != figures["measured_activation_bytes"]:
            sys.exit(f"rank {figures['rank']}: predicted "
                     f"{figures['activation_bytes']} activation bytes, "
                     f"measured {figures['measured_activation_bytes']}")
    held = rank["measured_activation_bytes"]
    reference = before["measured_activation_bytes"]
    share = held / reference
    verdict = "ok" if share <= max_share else "too much"
    print(f"rank {rank['rank']}: {reference} -> {held} activation bytes "
          f"({share:.2f}): {verdict}")
    if share > max_share:
        sys.exit(1)

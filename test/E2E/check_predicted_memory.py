#!/usr/bin/python3
"""Checks that each rank's predicted peak memory is the measured one.

Usage: check_predicted_memory.py METRICS.jsonl...

Reads the per-rank line ("ranks") of each metrics file and compares each
rank's predicted_peak_bytes (what --report predicts: the simulation of the
rank's action table with the package's estimated stage costs, its data
parallelism and the run's optimizer) with measured_peak_bytes (the most
it held in a training step: resident parameter, gradient and optimizer
state pages and the saved values alive, after each action). They must
agree within two memory pages per rank (resident figures count whole
pages, and a ZeRO share need not start or end on one); prints each file's
largest difference.
"""
import sys

from rank_figures import rank_figures

PAGE = 4096

for path in sys.argv[1:]:
    largest = 0
    for rank in rank_figures(path):
        predicted = rank["predicted_peak_bytes"]
        measured = rank["measured_peak_bytes"]
        if predicted < 0:
            sys.exit(f"{path}: rank {rank['rank']} has no prediction")
        if abs(predicted - measured) > 2 * PAGE:
            sys.exit(f"{path}: rank {rank['rank']} was predicted to peak at "
                     f"{predicted} bytes and peaked at {measured} "
                     f"(activations: predicted "
                     f"{rank['predicted_peak_activation_bytes']}, measured "
                     f"{rank['measured_peak_activation_bytes']})")
        largest = max(largest, abs(predicted - measured))
    print(f"predicted peaks within {largest} bytes of the measured ones")

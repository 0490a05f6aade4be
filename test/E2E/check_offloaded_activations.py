#!/usr/bin/python3
"""Checks what activation offload holds where, against a run without it.

Usage: check_offloaded_activations.py BASELINE.jsonl OFFLOADED.jsonl

Reads the per-rank line ("ranks") of both metrics files. For every rank of
OFFLOADED: the saved values held where the stage functions run, measured
(measured_activation_bytes) and predicted (activation_bytes), are equal,
and so are those held offloaded in host memory
(measured_offloaded_activation_bytes, offloaded_activation_bytes); a rank
whose stages held more than two microbatches in BASELINE holds at most two
(in_flight_microbatches, and at most two microbatches' saved bytes,
measured) and offloads some, and any other rank holds what it held in
BASELINE and offloads nothing. Prints one line per rank.
"""
import sys

from rank_figures import rank_figures

baseline = {rank["rank"]: rank for rank in rank_figures(sys.argv[1])}
for rank in rank_figures(sys.argv[2]):
    before = baseline[rank["rank"]]
    name = f"rank {rank['rank']}"
    for kind in ("activation", "offloaded_activation"):
        predicted, measured = (rank[f"{kind}_bytes"],
                               rank[f"measured_{kind}_bytes"])
        if predicted != measured:
            sys.exit(f"{name}: predicted {predicted} {kind} bytes, measured "
                     f"{measured}")
    held, offloaded = (rank["measured_activation_bytes"],
                       rank["measured_offloaded_activation_bytes"])
    if before["in_flight_microbatches"] > 2:
        two = 2 * rank["saved_bytes_per_microbatch"]
        if rank["in_flight_microbatches"] > 2 or held > two or offloaded == 0:
            sys.exit(f"{name}: holds {rank['in_flight_microbatches']} "
                     f"microbatches ({held} bytes, two are {two}) and "
                     f"offloads {offloaded} bytes")
    elif held != before["measured_activation_bytes"] or offloaded != 0:
        sys.exit(f"{name}: held {before['measured_activation_bytes']} bytes "
                 f"without offload, {held} with, and offloads {offloaded}")
    print(f"{name}: {before['measured_activation_bytes']} -> {held} "
          f"activation bytes, {offloaded} offloaded: ok")

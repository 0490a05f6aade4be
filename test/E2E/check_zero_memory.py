#!/usr/bin/python3
"""Checks that each ZeRO level holds what it promises, per rank.

Usage: check_zero_memory.py D ZERO0.jsonl ZERO1.jsonl ZERO2.jsonl ZERO3.jsonl

Reads the per-rank lines ("ranks") of the four metrics files (levels 0 to
3 of one run, D data-parallel replicas) and compares each rank's
parameter_bytes, gradient_bytes and optimizer_state_bytes with those of
the level-0 rank of its stage: a quantity the level shards (optimizer
state from level 1, gradients from 2, parameters from 3) must be 1/D of
it (within two memory pages: the figures are resident pages, and a share
need not start or end on one), the others all of it. peak_rss_bytes must
be there and positive.
"""
import sys

from rank_figures import rank_figures

PAGE = 4096
SHARDED_FROM = {"optimizer_state_bytes": 1, "gradient_bytes": 2,
                "parameter_bytes": 3}

replicas = int(sys.argv[1])
levels = [rank_figures(path) for path in sys.argv[2:6]]
whole = {rank["pp"]: rank for rank in levels[0]}
for level, ranks in enumerate(levels):
    for rank in ranks:
        if rank.get("peak_rss_bytes", 0) <= 0:
            sys.exit(f"zero {level} rank {rank['rank']}: no peak_rss_bytes")
        for field, first in SHARDED_FROM.items():
            full, held = whole[rank["pp"]][field], rank[field]
            expected = full / replicas if level >= first else full
            slack = 2 * PAGE if level >= first else 0
            if abs(held - expected) > slack:
                sys.exit(f"zero {level} rank {rank['rank']} holds {held} "
                         f"{field}; its stage's whole is {full}, so it "
                         f"should hold about {expected:.0f}")
    print(f"zero {level}: every rank holds what the level promises")

#!/usr/bin/python3
"""Checks that a --shard-optimizer run keeps 1/D of each stage's optimizer
state on each of its D replicas.

Usage: check_optimizer_shards.py UNSHARDED.jsonl SHARDED.jsonl D

Reads the per-rank lines ("ranks") of both metrics files: per stage, each
sharded replica must hold the unsharded replica's state bytes divided by D,
rounded to whole floats (the last share may be smaller by the padding).
"""
import sys

from rank_figures import rank_figures

unsharded, sharded, replicas = (rank_figures(sys.argv[1]),
                                rank_figures(sys.argv[2]), int(sys.argv[3]))
whole = {r["pp"]: r["optimizer_state_bytes"] for r in unsharded}
for rank in sharded:
    full = whole[rank["pp"]]
    # AdamW keeps two floats per element.
    share = -(-full // 8 // replicas) * 8
    if not share - 8 * replicas <= rank["optimizer_state_bytes"] <= share:
        sys.exit(f"rank {rank['rank']} holds {rank['optimizer_state_bytes']} "
                 f"bytes of optimizer state; its stage's whole state is "
                 f"{full}, so 1/{replicas} is about {share}")
print(f"every rank holds 1/{replicas} of its stage's optimizer state")

#!/usr/bin/python3
"""Compares a run with the memory plan against one without it.

Usage: check_memory_plan.py PLANNED.jsonl UNPLANNED.jsonl SCHEDULE MICROBATCHES

Both metrics files must end with the same params_sha256 (the plan moves
tensors, never arithmetic). Per rank: the planned run allocates fewer
tensors on their own per step and has arenas, the unplanned run none; the
saved bytes per microbatch equal pp-partition's estimate; the in-flight
microbatches are the schedule's (1f1b: min(m, stages - stage), gpipe: m)
and the activation bytes their product with the saved bytes. Prints one
line per stage.
"""
import json
import sys


def read(path):
    ranks, digest = None, None
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            ranks = record.get("ranks", ranks)
            digest = record.get("params_sha256", digest)
    if ranks is None or digest is None:
        sys.exit(f"{path}: no per-rank line or no params_sha256")
    return ranks, digest


(planned, planned_digest), (unplanned, unplanned_digest) = (read(sys.argv[1]),
                                                            read(sys.argv[2]))
schedule, microbatches = sys.argv[3], int(sys.argv[4])
if planned_digest != unplanned_digest:
    sys.exit(f"params_sha256 differs: {planned_digest} with the plan, "
             f"{unplanned_digest} without")
print("params_sha256 equal")
stages = max(rank["pp"] for rank in planned) + 1
for plan, heap in zip(planned, unplanned):
    stage = plan["pp"]
    where = f"stage {stage}"
    in_flight = microbatches if schedule == "gpipe" else min(
        microbatches, stages - stage)
    checks = [
        (plan["heap_tensor_allocations_per_step"] <
         heap["heap_tensor_allocations_per_step"],
         "allocates fewer tensors on their own with the plan"),
        (plan["arena_bytes"] > 0 and heap["arena_bytes"] == 0,
         "has arenas with the plan only"),
        (plan["saved_bytes_per_microbatch"] ==
         plan["estimated_saved_bytes_per_microbatch"],
         "saves what pp-partition estimated"),
        (plan["in_flight_microbatches"] == in_flight,
         f"holds {in_flight} microbatches in flight"),
        (plan["activation_bytes"] ==
         in_flight * plan["saved_bytes_per_microbatch"],
         "holds in-flight microbatches x saved bytes"),
    ]
    for ok, what in checks:
        if not ok:
            sys.exit(f"{where} does not hold: {what}\n"
                     f"planned: {plan}\nunplanned: {heap}")
    print(f"{where}: {in_flight} in flight, saved = estimate, "
          f"fewer heap tensors")

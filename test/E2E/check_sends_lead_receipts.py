#!/usr/bin/python3
"""Checks that no message of a 2-rank pipeline arrived before its Send ran.

Usage: check_sends_lead_receipts.py TRACE_JSON

The trace is a pp-run --trace of a chain of two stages on two ranks of one
host, where each rank sends one message class (rank 0 forwards, rank 1
input gradients): every recv span of one rank (step, microbatch) must end
no earlier than the other rank's send span of that step and microbatch
starts, as the ranks share the host's monotonic clock. A rank that sent as
soon as it computed, ignoring where its row places the Send, lets the
other rank receive earlier. Prints how many recv spans it checked.
"""
import json
import sys

with open(sys.argv[1]) as f:
    spans = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def key(span):
    return span["tid"], span["args"]["step"], span["args"]["microbatch"]


sends = {key(s): s for s in spans if s["name"] == "send"}
receipts = [s for s in spans if s["name"] == "recv"]
if not receipts:
    sys.exit(f"{sys.argv[1]}: no recv spans")
for recv in receipts:
    rank, step, microbatch = key(recv)
    send = sends.get((1 - rank, step, microbatch))
    if send is None:
        sys.exit(f"{sys.argv[1]}: rank {1 - rank} has no send span of step "
                 f"{step} microbatch {microbatch}")
    if recv["ts"] + recv["dur"] < send["ts"]:
        received = recv["ts"] + recv["dur"]
        sys.exit(f"{sys.argv[1]}: rank {rank} received microbatch "
                 f"{microbatch} of step {step} at {received:.1f} us, before "
                 f"rank {1 - rank}'s send of it began at {send['ts']:.1f} us")
print(f"{len(receipts)} receipts after their sends")

#!/usr/bin/python3
"""Checks that every process on every test host ended soon after a fault.

Usage: check_host_exits.py LOG PROCESSES MAX_SECONDS

Reads the "exit H.L STATUS SECONDS" lines network_hosts.py --after-start
prints (one per process it started) from LOG and fails unless there are
PROCESSES of them, each of a process that ended within MAX_SECONDS of the
fault. Prints one line per process.
"""
import sys

log, processes, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
exits = [line.split() for line in open(log, errors="replace")
         if line.startswith("exit ")]
if len(exits) != processes:
    sys.exit(f"{log}: {len(exits)} exit lines, {processes} processes")
for _, label, status, seconds in exits:
    verdict = "ok" if float(seconds) <= limit else "too late"
    print(f"host {label}: exit {status} after {seconds} s: {verdict}")
    if float(seconds) > limit:
        sys.exit(1)

#!/usr/bin/python3
"""Checks pp-run --print-peak-rss's line: every one of RANKS ranks reported
its peak resident memory, and none above LIMIT MiB.

Usage: check_peak_rss.py RANKS LIMIT < pp-run's stdout
"""
import re
import sys

ranks, limit = int(sys.argv[1]), float(sys.argv[2])
lines = [l for l in sys.stdin if l.startswith("peak resident memory per rank:")]
if len(lines) != 1:
    sys.exit("expected one 'peak resident memory per rank:' line, got %d" % len(lines))
sizes = re.findall(r" (\d+)=([0-9.]+) MiB", lines[0])
if len(sizes) != ranks:
    sys.exit("expected %d ranks with a size in: %s" % (ranks, lines[0].strip()))
for rank, size in sizes:
    if float(size) > limit:
        sys.exit("rank %s peaked at %s MiB, above %g MiB" % (rank, size, limit))
    print("rank %s peak within %g MiB" % (rank, limit))

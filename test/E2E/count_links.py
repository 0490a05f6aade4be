#!/usr/bin/python3
"""Runs a job and counts, from /proc, the TCP connections of its ranks.

Usage: count_links.py --master-port P --expect RANK:PEER,PEER... ...
                      -- COMMAND...

Runs COMMAND (which starts the job's pp-rank processes, on this machine's
network namespaces or its own) and, while it runs, reads every pp-rank
process whose MASTER_PORT is P: its RANK, its sockets (/proc/PID/fd) and
its network namespace's TCP table (/proc/PID/net/tcp, tcp6). Each
established connection is matched with the rank process at its other end;
one on port P is the rendezvous store's.

Passes (exit 0) when, at some moment, every expected rank runs, each holds
connections with exactly the ranks --expect names and none with the store
or with any other process, and COMMAND succeeds; it prints "rank R links
with ranks A, B" per rank for that moment. Otherwise exits 1, printing
what the ranks held at the moment closest to that.
"""
import argparse
import os
import subprocess
import sys
import time


def parse_expect(items):
    expected = {}
    for item in items:
        rank, _, peers = item.partition(":")
        expected[int(rank)] = {int(p) for p in peers.split(",") if p}
    return expected


def environment(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = f.read().split(b"\0")
    return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)


def endpoint(text):
    """'0100007F:1F90' (or the 32-digit IPv6 form) as (address hex, port)."""
    address, port = text.split(":")
    return address, int(port, 16)


def connections(pid):
    """The established TCP connections of `pid`: (local, remote) endpoints."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and fields[9] in inodes:
                found.append((endpoint(fields[1]), endpoint(fields[2])))
    return found


def sample(port):
    """Per rank: (its connections, its network namespace)."""
    ranks = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "pp-rank":
                    continue
            env = environment(pid)
            if env.get("MASTER_PORT") != str(port) or "RANK" not in env:
                continue
            netns = os.readlink(f"/proc/{pid}/ns/net")
            ranks[int(env["RANK"])] = (connections(pid), netns)
        except (OSError, ValueError):
            continue
    return ranks


def is_loopback(address):
    return address.endswith("7F") or address == "0" * 31 + "1"


def links(ranks, port):
    """Per rank: the peer ranks it is connected with, and what else it is
    connected with ("store", "unknown"). Loopback endpoints are told apart
    by network namespace."""
    owner = {}
    for rank, (held, netns) in ranks.items():
        for local, _ in held:
            owner[(local, netns if is_loopback(local[0]) else "")] = rank
    result = {}
    for rank, (held, netns) in ranks.items():
        peers, others = set(), []
        for local, remote in held:
            if port in (local[1], remote[1]):
                others.append("store")
                continue
            key = (remote, netns if is_loopback(remote[0]) else "")
            if key in owner and owner[key] != rank:
                peers.add(owner[key])
            else:
                others.append("unknown")
        result[rank] = (peers, others)
    return result


def describe(rank, peers, others):
    text = f"rank {rank} links with ranks " + ", ".join(map(str, sorted(peers)))
    return text + ("" if not others else " and " + ", ".join(sorted(others)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--master-port", type=int, required=True)
    parser.add_argument("--expect", nargs="+", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    expected = parse_expect(args.expect)

    job = subprocess.Popen(command)
    matched, closest, closest_misses = None, None, None
    while job.poll() is None:
        current = links(sample(args.master_port), args.master_port)
        misses = sum(
            rank not in current
            or current[rank][0] != peers
            or bool(current[rank][1])
            for rank, peers in expected.items()
        )
        if misses == 0 and set(current) == set(expected):
            matched = current
        elif matched is None and (closest is None or misses < closest_misses):
            closest, closest_misses = current, misses
        time.sleep(0.02)
    if job.returncode != 0:
        print(f"count_links.py: the job failed (exit {job.returncode})")
        return 1
    if matched is None:
        print("count_links.py: the ranks never held just the expected links;"
              " closest:")
        for rank in sorted(closest or {}):
            print("  " + describe(rank, *closest[rank]))
        return 1
    for rank in sorted(matched):
        print(describe(rank, *matched[rank]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Starts a multi-rank pp-run job, injects a fault once it trains, and
reports how the launcher and its ranks ended.

Usage: launcher_faults.py FAULT LIMIT PP_RUN_COMMAND...

FAULT is one of
  SIGTERM|SIGINT|SIGHUP|SIGKILL   sent to the launcher alone
  stop-rank1                      SIGSTOP to rank 1
  kill-rank1                      SIGKILL to rank 1

Waits for the launcher's second `step` line, injects the fault, then waits
for the launcher to exit and for every rank to be gone (exited and reaped,
or a zombie). Prints the launcher's first stdout lines, how it ended, how
long the ranks took to go, and its stderr; exits 1 (killing what is left)
if the launcher and its ranks are not all gone LIMIT seconds after the
fault.
"""
import os
import signal
import subprocess
import sys
import threading
import time

START_LIMIT = 300  # seconds until the job trains, on a loaded machine


def proc_stat(pid):
    """(ppid, state, start time) of `pid`, or None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0], fields[19]


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"RANK="):
                    return int(entry[5:])
    except OSError:
        pass
    return None


def ranks_of(launcher):
    """{rank: (pid, start time)} of the launcher's children."""
    ranks = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = proc_stat(int(name))
            rank = rank_of(int(name))
            if stat and stat[0] == launcher and rank is not None:
                ranks[rank] = (int(name), stat[2])
    return ranks


def alive(pid, start):
    stat = proc_stat(pid)
    return stat is not None and stat[2] == start and stat[1] != "Z"


def main():
    fault, limit, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    # A shell that runs the test in the background ignores SIGINT; the
    # launcher keeps ignored signals ignored, as it should.
    launcher = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    stdout, stderr, training = [], [], threading.Event()

    def read(stream, lines):
        for line in stream:
            lines.append(line.rstrip("\n"))
            if not training.is_set() and \
                    sum(l.startswith("step ") for l in stdout) >= 2:
                training.set()

    readers = [threading.Thread(target=read, args=(stream, lines), daemon=True)
               for stream, lines in ((launcher.stdout, stdout),
                                     (launcher.stderr, stderr))]
    for reader in readers:
        reader.start()
    ranks = {}
    try:
        if not training.wait(START_LIMIT):
            sys.exit(f"the job did not train within {START_LIMIT} s")
        ranks = ranks_of(launcher.pid)
        print(f"{len(ranks)} ranks training")
        injected = time.monotonic()
        if fault.startswith("SIG"):
            launcher.send_signal(getattr(signal, fault))
        else:
            action, rank = fault.split("-rank")
            os.kill(ranks[int(rank)][0],
                    signal.SIGSTOP if action == "stop" else signal.SIGKILL)
        deadline = injected + limit
        while time.monotonic() < deadline and any(
                alive(pid, start) for pid, start in ranks.values()):
            time.sleep(0.02)
        ranks_gone = time.monotonic() - injected
        try:
            code = launcher.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            sys.exit(f"the launcher still runs {limit} s after {fault}")
        launcher_gone = time.monotonic() - injected
        if any(alive(pid, start) for pid, start in ranks.values()):
            sys.exit(f"a rank still runs {limit} s after {fault}")
        for reader in readers:
            reader.join()
        for line in stdout[:5]:
            print("stdout:", line)
        print("launcher ended by " +
              (signal.Signals(-code).name if code < 0 else f"exit code {code}"))
        print(f"{fault}: no rank alive {ranks_gone:.2f} s later, no launcher "
              f"{launcher_gone:.2f} s later (limit {limit:g} s)")
        for line in stderr:
            print("stderr:", line)
        print("last stderr line:", stderr[-1] if stderr else "")
    finally:
        if launcher.poll() is None:
            launcher.kill()
        for pid, start in ranks.values():
            if alive(pid, start):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()

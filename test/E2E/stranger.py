"""A stranger at every listener of a running pp-run job.

Usage: stranger.py DRIP_SECONDS COMMAND...

Runs COMMAND (a pp-run launcher), and while it runs finds every TCP socket
that the launcher or one of its ranks listens on (/proc/net/tcp and the
processes' descriptors), as anyone on the machine can, connects to each as
soon as it appears (again whenever the job closed the last connection) and
sends every connection one zero byte every DRIP_SECONDS, never a proof of
the job secret. Prints the command's exit code, how many listeners it
reached, whether any connection got more than the 32-byte challenge (a
byte of the job's data), how many refusals the ranks logged, and the
command's last stderr line.
"""

import os
import socket
import subprocess
import sys
import time

CHALLENGE_BYTES = 32


def descendants(root):
    """The process ids of `root` and of all its descendants."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    family, grown = {root}, True
    while grown:
        grown = False
        for pid, parent in parents.items():
            if parent in family and pid not in family:
                family.add(pid)
                grown = True
    return family


def listening_ports(pids):
    """The IPv4 ports on which the processes `pids` listen."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    ports = set()
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].split(":")[1], 16))
    return ports


def read_available(fd):
    """What the non-blocking `fd` holds now."""
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    except BlockingIOError:
        pass
    return data


def main():
    drip = float(sys.argv[1])
    job = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    os.set_blocking(job.stderr.fileno(), False)
    stderr = b""
    reached = set()
    open_connections = {}  # port -> socket
    received = {}  # socket -> bytes received
    last_drip = time.monotonic()
    while job.poll() is None:
        for port in listening_ports(descendants(job.pid)):
            if port in open_connections:
                continue
            stranger = socket.socket()
            try:
                stranger.connect(("127.0.0.1", port))
            except OSError:
                stranger.close()
                continue
            stranger.setblocking(False)
            reached.add(port)
            open_connections[port] = stranger
            received[stranger] = 0
        now = time.monotonic()
        dripping = now - last_drip >= drip
        if dripping:
            last_drip = now
        for port, stranger in list(open_connections.items()):
            closed = False
            try:
                while True:
                    got = stranger.recv(4096)
                    if not got:
                        closed = True
                        break
                    received[stranger] += len(got)
            except BlockingIOError:
                pass
            except OSError:
                closed = True
            if dripping and not closed:
                try:
                    stranger.send(b"\0")
                except OSError:
                    closed = True
            if closed:
                stranger.close()
                del open_connections[port]
        stderr += read_available(job.stderr.fileno())
        time.sleep(0.005)
    os.set_blocking(job.stderr.fileno(), True)
    stderr += job.stderr.read()
    most = max(received.values(), default=0)
    lines = stderr.decode(errors="replace").splitlines()
    print(f"exit {job.returncode}")
    print(f"listeners {len(reached)}")
    print("no job data" if most <= CHALLENGE_BYTES else
          f"a connection got {most} bytes")
    refusals = sum("refused a connection from 127.0.0.1:" in line
                   for line in lines)
    print(f"refusals {refusals}")
    print("last stderr line: " + (lines[-1] if lines else ""))


if __name__ == "__main__":
    main()

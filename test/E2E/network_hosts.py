#!/usr/bin/python3
"""Runs commands on test hosts: network namespaces joined by a bridge.

Usage: network_hosts.py [--hosts N] [--per-host K] [--timeout S]
                        [--after-start 'HOST:SECONDS:ACTION'] -- COMMAND...

Makes N network namespaces (the hosts, default 2), each with one address
on a private subnet (host h is 10.<x>.<y>.(h+1)) on a veth pair to a
bridge in a namespace of its own, and runs K copies of COMMAND (default 1)
in each host at once, with {node} (the host's number), {local} (the
copy's number on its host), {rank} (node x K + local), {nodes}, {ranks},
{master} (host 0's address) and {addr} (this host's address) replaced in
every argument. Each copy's output is passed on a line at a time after
"[host H.L] ". Waits for every copy (at most --timeout seconds, default
600) and exits with 0 when all succeeded, else 1 after naming those that
failed.

--after-start 'HOST:SECONDS:ACTION' does ACTION to a host SECONDS after
the copies started: "kill" sends SIGKILL to its copies' process groups,
"cut" takes its link down. Then the copies' exit is awaited as usual, and
the script prints, per copy, its exit status and the seconds it took after
the action, as "exit H.L STATUS SECONDS".

The namespaces, the bridge and every process started in them are removed
however the script ends (failure, timeout, SIGTERM, SIGINT). Needs root
(CAP_NET_ADMIN) and iproute2's `ip`.
"""
import argparse
import os
import signal
import subprocess
import sys
import threading
import time

IP = "/usr/sbin/ip" if os.path.exists("/usr/sbin/ip") else "ip"


def ip(*args):
    subprocess.run([IP, *args], check=True, stdout=subprocess.DEVNULL)


class Hosts:
    """N namespaces on one bridge; removed by close()."""

    def __init__(self, count):
        tag = os.getpid() % 60000
        self.prefix = f"pp{tag}"
        self.subnet = f"10.{200 + tag % 50}.{tag % 250}"
        self.hub = f"{self.prefix}hub"
        self.names = [f"{self.prefix}h{h}" for h in range(count)]
        self.addresses = [f"{self.subnet}.{h + 1}" for h in range(count)]
        self.made = []
        try:
            self._make()
        except BaseException:
            self.close()
            raise

    def _make(self):
        ip("netns", "add", self.hub)
        self.made.append(self.hub)
        ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        ip("-n", self.hub, "link", "set", "br0", "up")
        for h, name in enumerate(self.names):
            ip("netns", "add", name)
            self.made.append(name)
            ip("-n", name, "link", "set", "lo", "up")
            ip("-n", name, "link", "add", "eth0", "type", "veth", "peer",
               "name", f"port{h}", "netns", self.hub)
            ip("-n", name, "addr", "add", f"{self.addresses[h]}/24", "dev",
               "eth0")
            ip("-n", name, "link", "set", "eth0", "up")
            ip("-n", self.hub, "link", "set", f"port{h}", "master", "br0")
            ip("-n", self.hub, "link", "set", f"port{h}", "up")

    def cut(self, h):
        ip("-n", self.hub, "link", "set", f"port{h}", "down")

    def close(self):
        for name in reversed(self.made):
            # Whatever still runs in it: killed, then the namespace goes.
            pids = subprocess.run([IP, "netns", "pids", name],
                                  capture_output=True, text=True).stdout
            for pid in pids.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run([IP, "netns", "del", name],
                           stderr=subprocess.DEVNULL)
        self.made = []


def forward(stream, prefix):
    for line in iter(stream.readline, b""):
        sys.stdout.buffer.write(prefix + line)
        sys.stdout.buffer.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--per-host", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--after-start")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    hosts = Hosts(args.hosts)
    copies = []

    def end(signum, frame):
        hosts.close()
        sys.exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, end)
    try:
        for node, name in enumerate(hosts.names):
            for local in range(args.per_host):
                values = {"node": node, "local": local,
                          "rank": node * args.per_host + local,
                          "nodes": args.hosts,
                          "ranks": args.hosts * args.per_host,
                          "master": hosts.addresses[0],
                          "addr": hosts.addresses[node]}
                argv = [part.format(**values) for part in command]
                process = subprocess.Popen(
                    [IP, "netns", "exec", name, *argv],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    start_new_session=True)
                label = f"{node}.{local}"
                threading.Thread(target=forward, daemon=True,
                                 args=(process.stdout,
                                       f"[host {label}] ".encode())).start()
                copies.append((label, node, process))
        acted = None
        if args.after_start:
            host, seconds, action = args.after_start.split(":")
            time.sleep(float(seconds))
            if action == "kill":
                for label, node, process in copies:
                    if node == int(host):
                        os.killpg(process.pid, signal.SIGKILL)
            else:
                hosts.cut(int(host))
            acted = time.monotonic()
        deadline = time.monotonic() + args.timeout
        failed = []
        for label, node, process in copies:
            try:
                status = process.wait(max(0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"network_hosts.py: host {label} still runs after "
                      f"{args.timeout} s", flush=True)
                status = "timeout"
            if acted is not None:
                print(f"exit {label} {status} "
                      f"{time.monotonic() - acted:.1f}", flush=True)
            if status != 0:
                failed.append(f"{label} ({status})")
        time.sleep(0.2)
        if failed:
            print("network_hosts.py: failed: " + ", ".join(failed), flush=True)
            return 1
        return 0
    finally:
        for label, node, process in copies:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        hosts.close()


if __name__ == "__main__":
    sys.exit(main())

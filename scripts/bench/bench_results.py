"""Reading the files scripts/bench.sh's runs leave: pp's metrics, the
machine and the commit measured (shared by peers_table.py and
parallel_table.py)."""
import json
import os
import platform
import statistics
import subprocess


def read_json(path):
    with open(path) as f:
        return json.load(f)


def pp_step_seconds(path, rows):
    """Median step seconds of a pp run over steps 2..N (step 1 warms up)."""
    with open(path) as f:
        rates = [r["samples_per_s"] for r in map(json.loads, f) if "step" in r]
    return statistics.median(rows / rate for rate in rates[1:])


def ranks_line(path):
    """The `ranks` line of a pp run's metrics: each rank's memory fields."""
    with open(path) as f:
        return next(r["ranks"] for r in map(json.loads, f) if "ranks" in r)


def per_rank(values, scale, digits):
    """Values of rank 0 / rank 1 / ... divided by SCALE."""
    return " / ".join(f"{v / scale:.{digits}f}" for v in values)


def peak_rss_kb(path):
    """A rank's peak RSS in KB, as `/usr/bin/time -f %M -o PATH` wrote it."""
    with open(path) as f:
        return int(f.read().split()[-1])


def summary(values):
    return statistics.median(values), min(values), max(values)


def ms(stats):
    mid, low, high = stats
    return f"{mid * 1e3:.1f} [{low * 1e3:.1f}-{high * 1e3:.1f}]"


def load_averages(out):
    """The load averages `uptime` wrote to OUT/load-before and OUT/load-after."""
    return [open(f"{out}/load-{w}").read().split("load average:")[1].strip()
            for w in ("before", "after")]


def machine():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def commit():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True,
                              text=True).stdout.strip()
    dirty = " (with uncommitted changes)" if git("status", "--porcelain",
                                                  "--untracked-files=no") else ""
    return git("rev-parse", "--short", "HEAD") + dirty

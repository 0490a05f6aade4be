#!/usr/bin/python3
"""Kills checkpointing pp-run jobs and checks what they leave behind.

Usage:
  checkpoint_faults.py kill-rank SEED DIR PP_RUN_COMMAND...
  checkpoint_faults.py kill-writes TRIALS SEED DIR PP_RUN_COMMAND...

PP_RUN_COMMAND is a training command without --steps and checkpoint
options; the driver adds them.

kill-rank: runs the command for 200 steps, checkpointing into DIR every 10
(keeping 2), and SIGKILLs a random rank (chosen by SEED) after a random step
line in [15, 150]; prints which rank died and how the launcher ended. The
caller resumes from DIR.

kill-writes: TRIALS times, runs the command with a checkpoint after every
step (keeping 2) into a fresh DIR, waits for the first checkpoint, then
after a random delay SIGKILLs the launcher and every rank at once, most
often while rank 0 writes a checkpoint. Then it resumes with --steps one
past the newest complete checkpoint (state.json present) and requires the
resumed run to load exactly that checkpoint, finish, and leave no stale
.tmp- directory (the resumed run's save removes them). Exits 1 on the first
trial that fails.
"""
import os
import random
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launcher_faults import alive, ranks_of  # noqa: E402

LIMIT = 120  # seconds for anything to happen, on a loaded machine


class Job:
    """A pp-run launcher whose stdout lines are collected as they come."""

    def __init__(self, command):
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.lines, self.changed = [], threading.Condition()
        self.errors = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.errors.extend(
            self.process.stderr.read().splitlines()), daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.lines.append(None)
            self.changed.notify_all()

    def wait_for(self, prefix, count=1):
        """Waits until `count` lines start with `prefix`; False if the job
        ended first."""
        with self.changed:
            while True:
                seen = [l for l in self.lines if l is not None and
                        l.startswith(prefix)]
                if len(seen) >= count:
                    return True
                if None in self.lines:
                    return False
                if not self.changed.wait(LIMIT):
                    sys.exit(f"no '{prefix}' line within {LIMIT} s")

    def kill_all(self):
        """SIGKILLs the launcher and every rank at once."""
        ranks = ranks_of(self.process.pid)
        self.process.kill()
        for pid, start in ranks.values():
            if alive(pid, start):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(LIMIT)
        deadline = time.monotonic() + LIMIT
        while any(alive(pid, start) for pid, start in ranks.values()):
            if time.monotonic() > deadline:
                sys.exit("a rank outlived SIGKILL")
            time.sleep(0.01)


def checkpoint_options(directory, steps, every, keep):
    return ["--steps", str(steps), "--checkpoint-dir", directory,
            "--checkpoint-every", str(every), "--keep-last", str(keep)]


def complete_steps(directory):
    """The steps of DIR's complete checkpoints (a state.json present)."""
    steps = []
    for name in os.listdir(directory):
        if name.startswith("step-") and os.path.isfile(
                os.path.join(directory, name, "state.json")):
            steps.append(int(name[5:]))
    return sorted(steps)


def kill_rank(seed, directory, command):
    rng = random.Random(seed)
    after = rng.randint(15, 150)
    job = Job(command + checkpoint_options(directory, 200, 10, 2))
    if not job.wait_for("step ", after):
        sys.exit("the job ended before the kill: " + " | ".join(job.errors))
    ranks = ranks_of(job.process.pid)
    victim = rng.choice(sorted(ranks))
    os.kill(ranks[victim][0], signal.SIGKILL)
    code = job.process.wait(LIMIT)
    print(f"killed rank {victim} of {len(ranks)} after step line {after}; "
          f"launcher ended by exit code {code}; complete checkpoints "
          f"{complete_steps(directory)}")


def kill_writes(trials, seed, directory, command):
    rng = random.Random(seed)
    left_temporary = 0
    for trial in range(trials):
        subprocess.run(["rm", "-rf", directory], check=True)
        job = Job(command + checkpoint_options(directory, 100000, 1, 2))
        if not job.wait_for("checkpoint after step"):
            sys.exit("the job ended before its first checkpoint: " +
                     " | ".join(job.errors))
        time.sleep(rng.uniform(0.0, 0.25))
        job.kill_all()
        steps = complete_steps(directory)
        temporary = [n for n in os.listdir(directory) if n.startswith(".tmp-")]
        left_temporary += bool(temporary)
        if not steps:
            sys.exit(f"trial {trial}: no complete checkpoint left")
        newest = steps[-1]
        resumed = subprocess.run(
            command + checkpoint_options(directory, newest + 1, 1, 2) +
            ["--resume"], capture_output=True, text=True, timeout=LIMIT)
        expected = f"resumed from {os.path.abspath(directory)}/step-{newest:08d}"
        if resumed.returncode != 0 or expected not in resumed.stdout:
            sys.exit(f"trial {trial}: resuming from step {newest} failed "
                     f"(exit {resumed.returncode}):\n{resumed.stdout}\n"
                     f"{resumed.stderr}")
        if any(n.startswith(".tmp-") for n in os.listdir(directory)):
            sys.exit(f"trial {trial}: a .tmp- directory survived the next save")
        print(f"trial {trial}: killed after checkpoint {newest}"
              f"{', a .tmp- directory left' if temporary else ''}; resumed")
    print(f"{trials} trials: every kill left a loadable checkpoint "
          f"({left_temporary} mid-write)")


def main():
    mode = sys.argv[1]
    if mode == "kill-rank":
        kill_rank(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
    elif mode == "kill-writes":
        kill_writes(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                    sys.argv[5:])
    else:
        sys.exit(f"unknown mode '{mode}'")


if __name__ == "__main__":
    main()

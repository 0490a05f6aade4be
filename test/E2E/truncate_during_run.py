"""Runs a command, truncates a file once the run has logged its first step.

usage: truncate_during_run.py FILE METRICS -- COMMAND...

Waits for the first line of the --metrics file METRICS, truncates FILE to
4096 bytes, then waits for the command (at most 120 s) and prints its
output, "truncated after step 1" and its exit status with the seconds it
took after the truncation.
"""
import os
import subprocess
import sys
import time

path, metrics, separator, *command = sys.argv[1:]
assert separator == "--", __doc__
run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
deadline = time.monotonic() + 120
while not (os.path.exists(metrics) and os.path.getsize(metrics) > 0):
    if run.poll() is not None or time.monotonic() > deadline:
        sys.exit("the run ended or stalled before its first step:\n" +
                 run.communicate()[0].decode())
    time.sleep(0.1)
os.truncate(path, 4096)
truncated = time.monotonic()
print("truncated after step 1")
output, _ = run.communicate(timeout=120)
sys.stdout.write(output.decode())
print(f"exit status {run.returncode} within {int(time.monotonic() - truncated) + 1} s")

#!/usr/bin/python3
"""Trains a model with every pipeline schedule on 2, 3 and 4 ranks and
several microbatch counts, and compares each run with one stage.

Usage: schedule_matrix.py PP_RUN WORK_DIR -- MODEL_ARGS...

For each rank count p in 2, 3, 4 and microbatch count m in (p, 2p, an odd
count; and 3, fewer than the stages, for p = 4), runs every schedule (interleaved-1f1b with --virtual-stages 2, zb-v
with its 2 stages per rank in V placement) and prints one line

    SCHEDULE p=P m=M same|DIFFERENT SHA256

comparing its params_sha256 with a one-stage run with the same microbatches.
Every schedule runs each stage's backwards (or their weight halves) in
microbatch order, so the gradients add up in the same order as on one stage:
the parameters must be the same bits. Exits non-zero when a run fails.
"""
import json
import os
import subprocess
import sys

SCHEDULES = [
    ("gpipe", []),
    ("1f1b", []),
    ("interleaved-1f1b", ["--virtual-stages", "2"]),
    ("zb-h1", []),
    ("zb-v", []),
]


def digest(pp_run, work, model_args, name, extra):
    metrics = os.path.join(work, name + ".jsonl")
    log = os.path.join(work, name + ".log")
    with open(log, "w") as out:
        status = subprocess.run([pp_run] + model_args + extra +
                                ["--metrics", metrics],
                                stdout=out, stderr=subprocess.STDOUT)
    if status.returncode != 0:
        sys.exit(f"{name} failed ({status.returncode}); see {log}:\n" +
                 open(log).read()[-2000:])
    with open(metrics) as f:
        for line in f:
            record = json.loads(line)
            if "params_sha256" in record:
                return record["params_sha256"]
    sys.exit(f"{name}: no params_sha256 in {metrics}")


def main():
    pp_run, work = sys.argv[1], sys.argv[2]
    model_args = sys.argv[sys.argv.index("--") + 1:]
    references = {}
    for p in (2, 3, 4):
        odd = p + 1 if (p + 1) % 2 else p + 2
        for m in (p, 2 * p, odd) + ((3,) if p == 4 else ()):
            if m not in references:
                references[m] = digest(pp_run, work, model_args, f"one-m{m}",
                                       ["--microbatches", str(m)])
            for schedule, extra in SCHEDULES:
                name = f"{schedule}-p{p}-m{m}"
                got = digest(pp_run, work, model_args, name,
                             ["--stages", str(p), "--microbatches", str(m),
                              "--schedule", schedule] + extra)
                verdict = "same" if got == references[m] else "DIFFERENT"
                print(f"{schedule} p={p} m={m} {verdict} {got}", flush=True)


if __name__ == "__main__":
    main()

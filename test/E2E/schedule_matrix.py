#!/usr/bin/python3
"""Trains a model with every pipeline schedule on 2, 3 and 4 ranks and
several microbatch counts, and compares each run with one stage.

Usage: schedule_matrix.py PP_RUN WORK_DIR [--ranks P,...] [--microbatches M,...]
                          [--schedules S,...] -- MODEL_ARGS...

For each rank count p in 2, 3, 4 (--ranks) and microbatch count m in (p,
2p, an odd count; and 3, fewer than the stages, for p = 4; --microbatches
gives the counts for every p), runs every schedule (--schedules names some;
interleaved-1f1b with --virtual-stages 2, zb-v with its 2 stages per rank
in V placement) and prints one line

    SCHEDULE p=P m=M same|DIFFERENT SHA256

comparing its params_sha256 with a one-stage run with the same microbatches.
Every schedule runs each stage's backwards (or their weight halves) in
microbatch order, so the gradients add up in the same order as on one stage:
the parameters must be the same bits. Exits non-zero when a run fails.
"""
import argparse
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


def counts(text):
    return [int(word) for word in text.split(",")]


def main():
    split = sys.argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pp_run")
    parser.add_argument("work")
    parser.add_argument("--ranks", type=counts, default=[2, 3, 4])
    parser.add_argument("--microbatches", type=counts)
    parser.add_argument("--schedules",
                        default=",".join(name for name, _ in SCHEDULES))
    args = parser.parse_args(sys.argv[1:split])
    pp_run, work = args.pp_run, args.work
    model_args = sys.argv[split + 1:]
    chosen = args.schedules.split(",")
    unknown = set(chosen) - {name for name, _ in SCHEDULES}
    if unknown:
        sys.exit(f"unknown schedules: {', '.join(sorted(unknown))}")
    references = {}
    for p in args.ranks:
        odd = p + 1 if (p + 1) % 2 else p + 2
        default = (p, 2 * p, odd) + ((3,) if p == 4 else ())
        for m in args.microbatches or default:
            if m not in references:
                references[m] = digest(pp_run, work, model_args, f"one-m{m}",
                                       ["--microbatches", str(m)])
            for schedule, extra in SCHEDULES:
                if schedule not in chosen:
                    continue
                name = f"{schedule}-p{p}-m{m}"
                got = digest(pp_run, work, model_args, name,
                             ["--stages", str(p), "--microbatches", str(m),
                              "--schedule", schedule] + extra)
                verdict = "same" if got == references[m] else "DIFFERENT"
                print(f"{schedule} p={p} m={m} {verdict} {got}", flush=True)


if __name__ == "__main__":
    main()

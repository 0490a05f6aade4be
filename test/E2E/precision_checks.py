#!/usr/bin/python3
"""The numeric bounds of a reduced-precision run (issue 25's).

Usage:
  precision_checks.py autocast METRICS FIXTURE MODEL
      METRICS' step-1 loss within 1e-2 relative of PyTorch's bf16 autocast
      loss of MODEL in FIXTURE (test/models/hf/autocast-bf16.json);
  precision_checks.py eval LOW_METRICS F32_METRICS
      the last eval loss of the reduced-precision run within 2% relative
      of the f32 run's.

Prints one line with the numbers and exits non-zero when out of bounds.
"""
import json
import sys


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def relative(got, want):
    return abs(got - want) / abs(want)


def check(name, got, want, bound):
    rel = relative(got, want)
    ok = rel <= bound
    print("%s %s: %.7f vs %.7f, relative %.2g (bound %g)" % (
        "ok" if ok else "FAIL", name, got, want, rel, bound))
    return ok


def main():
    kind = sys.argv[1]
    if kind == "autocast":
        metrics, fixture, model = sys.argv[2:5]
        step1 = next(r["loss"] for r in records(metrics) if r.get("step") == 1)
        want = json.load(open(fixture))[model]["autocast_bf16"]
        ok = check("step-1 loss against autocast", step1, want, 1e-2)
    elif kind == "eval":
        low, f32 = (
            [r["eval_loss"] for r in records(path) if "eval_loss" in r][-1]
            for path in sys.argv[2:4])
        ok = check("last eval loss against f32", low, f32, 0.02)
    else:
        sys.exit("unknown check " + kind)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

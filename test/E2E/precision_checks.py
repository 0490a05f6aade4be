#!/usr/bin/python3
"""The numeric bounds of a reduced-precision run (issue 25's).

Usage:
  precision_checks.py autocast METRICS FIXTURE MODEL
      METRICS' step-1 loss within 1e-2 relative of PyTorch's bf16 autocast
      loss of MODEL in FIXTURE (test/models/hf/autocast-bf16.json);
  precision_checks.py eval LOW_METRICS F32_METRICS
      the last eval loss of the reduced-precision run within 2% relative
      of the f32 run's;
  precision_checks.py untouched SCALED_METRICS STILL_METRICS
      the steps SCALED skipped (fp16 overflow), and the first one it took,
      have the losses of STILL, the same run at learning rate 0: every
      rank's parameters stayed as they were through the skipped steps;
  precision_checks.py resumed WHOLE_METRICS RESUMED_METRICS
      every step of the resumed run has the uninterrupted run's loss,
      gradient norm, loss scale and skip, and the final parameters agree.

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
    elif kind == "untouched":
        scaled, still = ([r for r in records(path) if "step" in r]
                         for path in sys.argv[2:4])
        skipped = next(i for i, r in enumerate(scaled) if not r["skipped"])
        ok = skipped > 0 and all(
            a["loss"] == b["loss"] for a, b in
            zip(scaled[:skipped + 1], still[:skipped + 1]))
        print("%s %d skipped steps left the parameters as they were" % (
            "ok" if ok else "FAIL", skipped))
    elif kind == "resumed":
        whole, resumed = (records(path) for path in sys.argv[2:4])
        fields = ("loss", "grad_norm", "loss_scale", "skipped")
        steps = {r["step"]: r for r in whole if "step" in r}
        ok = True
        for r in (r for r in resumed if "step" in r):
            same = all(r[f] == steps[r["step"]][f] for f in fields)
            ok = ok and same
            print("%s step %d loss_scale %g skipped %s" % (
                "same" if same else "DIFFERENT", r["step"], r["loss_scale"],
                r["skipped"]))
        digests = [next(r["params_sha256"] for r in run
                        if "params_sha256" in r) for run in (whole, resumed)]
        ok = ok and digests[0] == digests[1]
        print("%s params_sha256" % ("same" if digests[0] == digests[1]
                                    else "DIFFERENT"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Issue 10's "must show" on a model pp's tests never saw (make_probe_lm.py).

Packs Debian's license texts into train/eval datasets, trains the probe LM
(TorchScript and ONNX) for 5 AdamW steps with --clip-grad-norm 1 and eval
every 2 steps on pp1xdp1, pp4xdp1, pp2xdp2 (both mesh orders, with and
without --shard-optimizer) and pp1xdp4 at global batch 16, and checks:
equal losses (relative 1e-5), eval at step 0 equal to PyTorch's on the same
windows, step-1 loss equal to PyTorch's on TrainingSampler's first batch,
middle stages reading nothing, sharding keeping params_sha256 and 1/D of
the optimizer state. Prints a table; exits 1 when a check fails.

    /usr/bin/python3 acceptance.py BUILD_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_probe_lm  # noqa: E402
import pp_sampler  # noqa: E402

SEQ, MB, SEED, EVAL_BATCHES, STEPS = 16, 4, 7, 3, 5
LAYOUTS = [  # name, stages, dp, microbatches, mesh order, shard
    ("pp1xdp1", 1, 1, 4, "pp,dp", False),
    ("pp4xdp1", 4, 1, 4, "pp,dp", False),
    ("pp2xdp2 pp,dp", 2, 2, 2, "pp,dp", False),
    ("pp2xdp2 dp,pp", 2, 2, 2, "dp,pp", False),
    ("pp2xdp2 pp,dp zero1", 2, 2, 2, "pp,dp", True),
    ("pp2xdp2 dp,pp zero1", 2, 2, 2, "dp,pp", True),
    ("pp1xdp4", 1, 4, 1, "pp,dp", False),
    ("pp1xdp4 zero1", 1, 4, 1, "pp,dp", True),
]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def initial_model(argv):
    """The build and work folders a probe gets (argv[1], argv[2]), with
    pp-run's cache in the work folder, and the LM with acceptance.py's
    initial weights."""
    build, work = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    os.environ["PP_CACHE_DIR"] = os.path.join(work, "cache")
    model = make_probe_lm.build()
    model.load_state_dict(torch.load(os.path.join(work, "probe-lm.init.pt")))
    return build, work, model


def tokens_of(path):
    # pp's dataset: a 72-byte header, then uint16 tokens (pp-data pack).
    return np.fromfile(path, dtype=np.uint16, offset=72).astype(np.int64)


def torch_loss(model, tokens, windows):
    x = torch.tensor(np.stack([tokens[n * SEQ:n * SEQ + SEQ] for n in windows]))
    y = torch.tensor(np.stack([tokens[n * SEQ + 1:n * SEQ + SEQ + 1]
                               for n in windows]))
    with torch.no_grad():
        logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           y.reshape(-1)).item()


def run(build, work, model, fmt, layout):
    name, stages, dp, micro, order, shard = layout
    metrics = os.path.join(work, "%s-%s.jsonl" % (fmt, name.replace(" ", "_")))
    cmd = [os.path.join(build, "bin/pp-run"), model, "--stages", str(stages),
           "--dp", str(dp), "--mesh-order", order, "--microbatch-size",
           str(MB), "--microbatches", str(micro), "--optimizer", "adamw",
           "--lr", "0.003", "--clip-grad-norm", "1", "--steps", str(STEPS),
           "--seed", str(SEED), "--data", os.path.join(work, "train.ppd"),
           "--seq-len", str(SEQ), "--eval-data",
           os.path.join(work, "eval.ppd"), "--eval-every", "2",
           "--eval-batches", str(EVAL_BATCHES), "--metrics", metrics,
           "--timeout", "60"]
    cmd += (["--input-shape", "tokens=?x%dxi64" % SEQ, "--loss",
             "cross_entropy:output_0"] if fmt == "pt" else
            ["--loss", "cross_entropy:logits"])
    if shard:
        cmd.append("--shard-optimizer")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        check(False, "%s %s exited %d: %s" % (fmt, name, done.returncode,
                                             done.stderr[-500:]))
        return None
    lines = [json.loads(line) for line in open(metrics)]
    return {
        "loss": [r["loss"] for r in lines if "loss" in r],
        "eval": {r["eval_after_step"]: r["eval_loss"] for r in lines
                 if "eval_loss" in r},
        "ranks": next(r["ranks"] for r in lines if "ranks" in r),
        "sha": next(r["params_sha256"] for r in lines if "params_sha256" in r),
    }


def main():
    build, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    os.environ["PP_CACHE_DIR"] = os.path.join(work, "cache")
    lic = "/usr/share/common-licenses/"
    pack = os.path.join(build, "bin/pp-data")
    subprocess.run([pack, "pack"] + [lic + f for f in
                   ("Apache-2.0", "BSD", "GPL-2", "MPL-2.0", "Artistic")] +
                   ["-o", os.path.join(work, "train.ppd")], check=True)
    subprocess.run([pack, "pack", lic + "LGPL-2.1", "-o",
                    os.path.join(work, "eval.ppd")], check=True)
    make_probe_lm.main.__globals__["sys"].argv = ["", work]
    make_probe_lm.main()

    # PyTorch's losses with the initial weights: eval at step 0 (windows
    # 0 .. EVAL_BATCHES * 16 - 1 in order), training step 1 (the first 16
    # positions of TrainingSampler(SEED, N)).
    model = make_probe_lm.build()
    model.load_state_dict(torch.load(os.path.join(work, "probe-lm.init.pt")))
    train, evals = tokens_of(os.path.join(work, "train.ppd")), \
        tokens_of(os.path.join(work, "eval.ppd"))
    gb = 16
    expected_eval = torch_loss(model, evals, range(EVAL_BATCHES * gb))
    first = pp_sampler.training_step(SEED, (len(train) - 1) // SEQ, 0, gb)
    expected_step1 = torch_loss(model, train, first)
    print("PyTorch: eval@0 %.7f  step-1 loss %.7f" % (expected_eval,
                                                      expected_step1))

    for fmt, model_file in (("pt", "probe-lm.pt"), ("onnx", "probe-lm.onnx")):
        results = {}
        for layout in LAYOUTS:
            results[layout[0]] = run(build, work,
                                     os.path.join(work, model_file), fmt,
                                     layout)
        base = results["pp1xdp1"]
        if base is None:
            continue
        print("\n%s: %-20s %-58s %-9s %-26s %s" % (
            fmt, "layout", "losses (steps 1-5)", "max rel", "eval@0,2,4,5",
            "elements_read / optimizer_state_bytes per rank, sha"))
        for layout in LAYOUTS:
            name, stages, dp, _, _, shard = layout
            r = results[name]
            if r is None:
                print("%s: %-20s FAILED" % (fmt, name))
                continue
            rel = max(abs(a - b) / abs(b) for a, b in zip(r["loss"],
                                                          base["loss"]))
            check(len(r["loss"]) == STEPS and rel <= 1e-5,
                  "%s %s losses differ by %g" % (fmt, name, rel))
            check(0 in r["eval"], "%s %s: no eval at step 0" % (fmt, name))
            ev0 = r["eval"].get(0, float("nan"))
            check(abs(ev0 - expected_eval) <= 1e-5 * expected_eval,
                  "%s %s eval@0 %r != PyTorch %r" % (fmt, name, ev0,
                                                      expected_eval))
            check(abs(r["loss"][0] - expected_step1) <= 1e-5 * expected_step1,
                  "%s %s step 1 %r != PyTorch %r" % (fmt, name, r["loss"][0],
                                                      expected_step1))
            ranks = sorted(r["ranks"], key=lambda x: x["rank"])
            for rank in ranks:
                middle = 0 < rank["pp"] < stages - 1
                check((rank["elements_read"] == 0) == middle,
                      "%s %s rank %d (pp%d) read %d" % (
                          fmt, name, rank["rank"], rank["pp"],
                          rank["elements_read"]))
            if shard:
                plain = results[name.replace(" zero1", "")]
                check(plain is not None and plain["sha"] == r["sha"],
                      "%s %s: sha differs from unsharded" % (fmt, name))
                if plain:
                    for a, b in zip(ranks, sorted(plain["ranks"],
                                                  key=lambda x: x["rank"])):
                        ratio = a["optimizer_state_bytes"] / \
                            b["optimizer_state_bytes"]
                        check(abs(ratio * dp - 1) < 0.05,
                              "%s %s rank %d optimizer state ratio %.3f" % (
                                  fmt, name, a["rank"], ratio))
            print("%s: %-20s %-58s %-9.2e %-26s %s sha=%s%s" % (
                fmt, name, " ".join("%.7f" % x for x in r["loss"]), rel,
                ",".join("%.5f" % r["eval"][k] for k in sorted(r["eval"])),
                " ".join("r%d(pp%d,dp%d):%d/%d" % (
                    x["rank"], x["pp"], x["dp"], x["elements_read"],
                    x["optimizer_state_bytes"]) for x in ranks),
                r["sha"][:12], "=base" if r["sha"] == base["sha"] else ""))
    print("\n%d failed checks" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

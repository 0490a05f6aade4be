#!/usr/bin/python3
"""Issue 21's matrix: nine Hugging Face families x five export formats
(test/models/hf/, written by make_hf_models.py) through pp-run, each
checked against the PyTorch references stored beside the fixtures.

Checks of one case (family, format):

  infer        pp-run --infer on FAMILY.input_0.pb ([2, 16] tokens): the
               logits within 1e-4 (max absolute) of PyTorch's fp32 logits
  weights      pp-run --infer --weights weights/FAMILY (transformers'
               save_pretrained of other weights, make_hf_weights.py): the
               logits within 1e-4 of transformers' with those weights
  train        5 AdamW steps with pp-run's defaults (lr 0.01, no weight
               decay, no clipping) on 1 stage, microbatch 4, on tokens.bin
               (--token-width 2 --seq-len 16, seed 0): every step's loss and
               step 1's grad norm within 1e-5 (relative) of PyTorch's
  microbatches M  the same global batch of 4 as M microbatches of 4 / M
               on 1 stage: the losses within 1e-5 of PyTorch's
  stages S/M   S stages, M microbatches: params_sha256 bit-equal to 1
               stage with M microbatches
  bf16         the train run with --precision bf16 (pp-apply-precision: f32
               master weights, bf16 compute; softmax, layer norm and the loss
               in f32): step 1's loss within 1e-2 (relative) of PyTorch's
               under torch.autocast("cpu", dtype=torch.bfloat16) on the same
               weights and windows (../../models/hf/autocast-bf16.json,
               written by make_autocast_losses.py), and params_sha256 not
               the f32 train run's (a bound of 1e-2 alone would pass f32)
  bf16 stages S/M  S stages, M microbatches, --precision bf16:
               params_sha256 bit-equal to 1 stage with M microbatches in
               bf16, after the train run's 5 steps (after 1, AdamW's step is
               about lr times the gradient's sign, which would hide
               gradients that differ in their last bits)
  attention    stages 2/2 under --recompute selective, which makes the
               attention nn.attention (--fuse-attention auto): no package
               of the runs before it calls nn.attention's gradient, that
               run's does, and its params_sha256 is bit-equal to the
               stages 2/2 run's with the separate ops
  cross-entropy  stages 2/4 (microbatches of one sequence) under --recompute
               full, which makes the LM head and its loss
               nn.linear_cross_entropy (--fuse-cross-entropy auto): no
               package of the run without recomputation calls its kernels,
               that run's does, and its params_sha256 is bit-equal to the
               stages 2/4 run's with the separate ops
  tp2          --tp 2: every step's loss and step 1's grad norm within 1e-5
               of the 1-rank train run (and the tensor axis must split some
               parameter). Later grad norms are not compared: the row-parallel
               all-reduce sums in another order, and AdamW's first step turns a
               gradient element that is zero up to rounding (|g| ~ 1e-9, below
               eps) into a step of lr times its sign, so Phi-3's step-2 grad
               norm moves by 3e-5 when the gradients agree within 8e-8

Without --full it runs CI's matrix: infer, weights and train for all 45
cases, and
for one format per family (the formats in turn, so each is covered)
`microbatches 2`, `stages 2/2`, `attention`, `cross-entropy`, `tp2`,
`bf16`, `bf16 stages 2/2` and `bf16 stages 4/2`. --full runs microbatches 1, 2, 4 x stages 1, 2, 4, tp2,
bf16 and bf16 stages 2 and 4 with microbatches 1, 2, 4 on every case.

One line per check: `ok FAMILY FORMAT CHECK ...` or `FAIL FAMILY FORMAT
CHECK ...` with the numbers or pp-run's first error line; a check listed in
--expected prints XFAIL instead of FAIL, and XPASS when it passes (an
unexpected pass: remove it from the list). A failed run fails the checks
that need it and nothing else. Then a table per check kind and the totals;
exits 1 on any FAIL or XPASS.

    run_matrix.py --build BUILD --work DIR [--full] [--jobs N]
        [--families a,b] [--formats x,y] [--checks infer,train,...]
        [--expected FILE] [--write-expected FILE]

--checks runs only the named kinds (infer, weights, train, microbatches,
stages, attention, cross-entropy, tp2, bf16, bf16-stages) of the checks the
matrix gives a case.

python3 with numpy and onnx only (no torch): it reads the references.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.normpath(os.path.join(HERE, "..", "..", "models", "hf"))
FAMILIES = ["gpt2", "llama", "llama-gqa", "qwen2", "qwen3", "mistral",
            "phi3", "gpt-neox", "bert"]
FORMATS = ["dynamo", "dynamo-unoptimized", "torchscript-exporter", "traced",
           "pt2"]
INFER_TOLERANCE, TRAIN_TOLERANCE, AUTOCAST_TOLERANCE = 1e-4, 1e-5, 1e-2
GLOBAL_BATCH, RUN_TIMEOUT = 4, 600
CHECK_KINDS = ["infer", "weights", "train", "microbatches", "stages",
               "attention", "cross-entropy", "tp2", "bf16", "bf16-stages"]
# Each family's step-1 loss under PyTorch's bf16 autocast.
AUTOCAST = json.load(open(os.path.join(MODELS, "autocast-bf16.json")))
# pp-run's parameters line with --tp: "...; 10 of 15 split over the tensor
# axis (tp 2), the rest replicated".
TP_SHARDED = re.compile(r"(\d+) of (\d+) split over the tensor axis")


def model_path(family, fmt):
    suffix = {"traced": ".traced.pt", "pt2": ".pt2"}.get(fmt,
                                                        "." + fmt + ".onnx")
    return os.path.join(MODELS, family + suffix)


def output_name(path):
    """The output the loss reads: the ONNX graph's, or output_0 (what the
    TorchScript and torch.export frontends call a forward's result)."""
    if path.endswith(".onnx"):
        return onnx.load(path, load_external_data=False).graph.output[0].name
    return "output_0"


def first_error(stderr):
    """pp-run's first error line, with the diagnostic that follows an error
    ending in ':' and the fixture folder's path cut."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if "error" in line:
            if line.rstrip().endswith(":") and i + 1 < len(lines):
                line += " " + lines[i + 1].strip()
            line = line.replace(MODELS + "/", "")
            return re.sub(r"; supported ops: .*", "", line)[:400]
    return (lines[-1] if lines else "no output")[:400]


class Case:
    """One family and format: its runs (serial, one cache) and checks."""

    def __init__(self, args, family, fmt, extras):
        self.args, self.family, self.fmt = args, family, fmt
        self.model = model_path(family, fmt)
        self.work = os.path.join(args.work, family + "." + fmt)
        self.reference = json.load(open(os.path.join(
            MODELS, family + ".reference.json")))
        self.extras = extras
        self.runs = {}
        self.lines = []
        self.results = {}
        self.details = {}

    def pp_run(self, key, extra):
        """Runs pp-run once (cached by key); returns (ok, stderr, seconds,
        metrics)."""
        if key in self.runs:
            return self.runs[key]
        os.makedirs(self.work, exist_ok=True)
        cmd = [os.path.join(self.args.build, "bin", "pp-run"), self.model,
               "--cache-dir", os.path.join(self.work, "cache"),
               "--cost-rates", "default", "--timeout", "120"] + extra
        if self.model.endswith(".pt"):  # .pt2 and ONNX carry their types
            cmd += ["--input-shape", "input_ids=?x%dxi64" %
                    self.reference["sequence"]]
        start = time.time()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=RUN_TIMEOUT)
            code, stderr = done.returncode, done.stderr + done.stdout
        except subprocess.TimeoutExpired:
            code, stderr = None, "error: timed out after %ds" % RUN_TIMEOUT
        seconds = time.time() - start
        ok = code == 0
        if code is not None and code < 0:
            stderr = "error: pp-run died of signal %d\n%s" % (-code, stderr)
            ok = False
        self.runs[key] = (ok, stderr, seconds)
        return self.runs[key]

    def train(self, stages=1, microbatches=1, tp=1, precision="f32",
              recompute="none"):
        key = train_key(stages, microbatches, tp, precision, recompute)
        metrics = os.path.join(self.work, key + ".jsonl")
        train = self.reference["train"]
        ok, stderr, _ = self.pp_run(key, [
            "--loss", "cross_entropy:" + output_name(self.model),
            "--optimizer", train["optimizer"], "--steps",
            str(len(train["steps"])), "--data",
            os.path.join(MODELS, train["data"]), "--token-width",
            str(train["token_width"]), "--seq-len", str(train["seq_len"]),
            "--microbatch-size", str(GLOBAL_BATCH // microbatches),
            "--microbatches", str(microbatches), "--stages", str(stages),
            "--tp", str(tp), "--precision", precision, "--recompute",
            recompute, "--metrics", metrics])
        if not ok:
            return None, first_error(stderr)
        lines = [json.loads(line) for line in open(metrics)]
        return {"loss": [r["loss"] for r in lines if "loss" in r],
                "grad_norm": [r["grad_norm"] for r in lines if "loss" in r],
                "sha": next(r["params_sha256"] for r in lines
                            if "params_sha256" in r)}, ""

    def report(self, check, passed, detail):
        expected = (self.family, self.fmt, check) in self.args.expected_set
        word = {(True, False): "ok", (True, True): "XPASS",
                (False, False): "FAIL", (False, True): "XFAIL"}[
                    (passed, expected)]
        self.lines.append("%s %s %s %s: %s" % (word, self.family, self.fmt,
                                               check, detail))
        self.results[check] = word
        self.details[check] = detail

    def check_logits(self, check, reference, extra):
        """pp-run --infer on the reference input (with `extra` options)
        against the logits in the file `reference`."""
        out_dir = os.path.join(self.work, check)
        infer = self.reference["infer"]
        ok, stderr, _ = self.pp_run(check, [
            "--infer", "--microbatch-size", str(infer["shape"][0]),
            "--inputs", os.path.join(MODELS, infer["input"]),
            "--outputs-dir", out_dir] + extra)
        if not ok:
            return self.report(check, False, first_error(stderr))
        got, want = (numpy_helper.to_array(onnx.load_tensor(path)) for path in
                     (os.path.join(out_dir, "output_0.pb"), reference))
        if got.shape != want.shape:
            return self.report(check, False, "logits %s, PyTorch's %s" % (
                list(got.shape), list(want.shape)))
        diff = float(np.max(np.abs(got.astype(np.float64) - want)))
        self.report(check, diff <= INFER_TOLERANCE,
                    "max |logits - PyTorch| %.3g (tolerance %g)" % (
                        diff, INFER_TOLERANCE))

    def check_infer(self):
        self.check_logits("infer", os.path.join(
            MODELS, self.reference["infer"]["output"]), [])

    def check_weights(self):
        weights = os.path.join(MODELS, "weights", self.family)
        self.check_logits("weights", weights + ".logits.pb",
                          ["--weights", weights])

    def check_train(self):
        steps = self.reference["train"]["steps"]
        got, error = self.train()
        if got is None:
            return self.report("train", False, error)
        want = [s["loss"] for s in steps]
        worst = relative(got["loss"], want)
        norm = relative(got["grad_norm"][:1], [steps[0]["grad_norm"]])
        self.report("train", worst <= TRAIN_TOLERANCE and
                    norm <= TRAIN_TOLERANCE,
                    "losses %s vs PyTorch %s (max rel %.2g), step-1 grad "
                    "norm %.7f vs %.7f (rel %.2g)" % (
                        fmt_list(got["loss"]), fmt_list(want), worst,
                        first(got["grad_norm"]), steps[0]["grad_norm"],
                        norm))

    def check_microbatches(self, microbatches):
        got, error = self.train(microbatches=microbatches)
        check = "microbatches %d" % microbatches
        if got is None:
            return self.report(check, False, error)
        want = [s["loss"] for s in self.reference["train"]["steps"]]
        worst = relative(got["loss"], want)
        self.report(check, worst <= TRAIN_TOLERANCE,
                    "losses %s, max rel %.2g from PyTorch's" % (
                        fmt_list(got["loss"]), worst))

    def check_bf16(self):
        f32, error = self.train()
        if f32 is None:
            return self.report("bf16", False, "f32: " + error)
        got, error = self.train(precision="bf16")
        if got is None:
            return self.report("bf16", False, error)
        if got["sha"] == f32["sha"]:
            return self.report("bf16", False, "params_sha256 %s, the f32 "
                               "run's: --precision bf16 changed nothing" %
                               got["sha"][:16])
        want = AUTOCAST[self.family]["autocast_bf16"]
        rel = relative(got["loss"][:1], [want])
        self.report("bf16", rel <= AUTOCAST_TOLERANCE,
                    "step-1 loss %.7f vs PyTorch's bf16 autocast %.7f (rel "
                    "%.2g, tolerance %g; f32 %.7f); params_sha256 not f32's"
                    % (first(got["loss"]), want, rel, AUTOCAST_TOLERANCE,
                       first(f32["loss"])))

    def check_stages(self, stages, microbatches, precision="f32"):
        check = "stages %d/%d" % (stages, microbatches)
        if precision != "f32":
            check = precision + " " + check
        base, error = self.train(microbatches=microbatches,
                                 precision=precision)
        if base is None:
            return self.report(check, False, "1 stage: " + error)
        got, error = self.train(stages=stages, microbatches=microbatches,
                                precision=precision)
        if got is None:
            return self.report(check, False, error)
        self.report(check, got["sha"] == base["sha"],
                    "params_sha256 %s, 1 stage %s" % (got["sha"][:16],
                                                      base["sha"][:16]))

    def fused_packages(self, kernel):
        """The case's compiled packages that call `kernel`."""
        return [path for path in glob.glob(os.path.join(
            self.work, "cache", "*", "stages.cpp"))
            if kernel + "(" in open(path).read()]

    def check_fused(self, check, kernel, microbatches, recompute):
        """Stages 2/M under `recompute`, whose program fuses what calls
        `kernel` by default, against the separate ops without
        recomputation."""
        base, error = self.train(stages=2, microbatches=microbatches)
        if base is None:
            return self.report(check, False, "separate ops: " + error)
        if self.fused_packages(kernel):
            return self.report(check, False, "a run without recomputation "
                               "calls " + kernel)
        got, error = self.train(stages=2, microbatches=microbatches,
                                recompute=recompute)
        if got is None:
            return self.report(check, False, error)
        if not self.fused_packages(kernel):
            return self.report(check, False, "the %s run's package calls no "
                               "%s: nothing fused" % (recompute, kernel))
        self.report(check, got["sha"] == base["sha"],
                    "params_sha256 %s, separate ops %s" % (
                        got["sha"][:16], base["sha"][:16]))

    def check_attention(self):
        self.check_fused("attention", "pp_cpu_attention_grad", 2, "selective")

    def check_cross_entropy(self):
        # Microbatches of one sequence: auto fuses where the bits stay.
        self.check_fused("cross-entropy", "pp_cpu_linear_cross_entropy",
                         GLOBAL_BATCH, "full")

    def check_tp(self):
        base, error = self.train()
        if base is None:
            return self.report("tp2", False, "1 rank: " + error)
        got, error = self.train(tp=2)
        if got is None:
            return self.report("tp2", False, error)
        loss = relative(got["loss"], base["loss"])
        norm = relative(got["grad_norm"][:1], base["grad_norm"][:1])
        sharded = TP_SHARDED.search(self.runs[train_key(1, 1, 2, "f32")][1])
        if not sharded or sharded.group(1) == "0":
            return self.report("tp2", False, "no parameter split over the "
                               "tensor axis (pp-run's parameters line)")
        self.report("tp2", max(loss, norm) <= TRAIN_TOLERANCE,
                    "%s of %s parameters sharded; losses %s, max rel %.2g; "
                    "step-1 grad norm rel %.2g from 1 rank" % (
                        sharded.group(1), sharded.group(2),
                        fmt_list(got["loss"]), loss, norm))

    def run(self):
        kinds = self.args.check_kinds
        if "infer" in kinds:
            self.check_infer()
        if "weights" in kinds:
            self.check_weights()
        if "train" in kinds:
            self.check_train()
        if self.extras["bf16"] and "bf16" in kinds:
            self.check_bf16()
        for microbatches in self.extras["microbatches"]:
            if microbatches > 1 and "microbatches" in kinds:
                self.check_microbatches(microbatches)
            for stages in self.extras["stages"]:
                if stages > 1 and "stages" in kinds:
                    self.check_stages(stages, microbatches)
            for stages in self.extras["bf16_stages"]:
                if "bf16-stages" in kinds:
                    self.check_stages(stages, microbatches, "bf16")
        if self.extras["attention"] and "attention" in kinds:
            self.check_attention()
        if self.extras["cross_entropy"] and "cross-entropy" in kinds:
            self.check_cross_entropy()
        if self.extras["tp"] and "tp2" in kinds:
            self.check_tp()
        return self


def train_key(stages, microbatches, tp, precision, recompute="none"):
    """The name of a training run in a case's cache and work folder."""
    key = "train-s%d-m%d-tp%d-%s" % (stages, microbatches, tp, precision)
    return key if recompute == "none" else key + "-" + recompute


def relative(got, want):
    if len(got) != len(want):
        return float("inf")
    return max((abs(a - b) / abs(b) for a, b in zip(got, want)), default=0.0)


def first(values):
    return values[0] if values else float("nan")


def fmt_list(values):
    return "[" + " ".join("%.7f" % v for v in values) + "]"


def extras_of(args, family_index, fmt):
    """The checks beyond infer and train a case gets (module docstring)."""
    if args.full:
        return {"microbatches": [1, 2, 4], "stages": [1, 2, 4], "tp": True,
                "attention": True, "cross_entropy": True, "bf16": True,
                "bf16_stages": [2, 4]}
    chosen = FORMATS[family_index % len(FORMATS)] == fmt
    return {"microbatches": [2] if chosen else [],
            "stages": [2] if chosen else [], "tp": chosen,
            "attention": chosen, "cross_entropy": chosen, "bf16": chosen,
            "bf16_stages": [2, 4] if chosen else []}


def table(cases, check_kinds):
    width = max(len(f) for f in FORMATS) + 1
    print("\n%-26s" % "family / check" + "".join(
        "%-*s" % (width, f) for f in FORMATS))
    for family in FAMILIES:
        for kind in check_kinds:
            row = [c for c in cases if c.family == family]
            if not row:
                continue
            cells = {c.fmt: c.results.get(kind) for c in row}
            if not any(cells.values()):
                continue
            print("%-26s" % (family + " " + kind) + "".join(
                "%-*s" % (width, cells.get(f) or "-") for f in FORMATS))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--checks", default=",".join(CHECK_KINDS))
    parser.add_argument("--expected", help="checks expected to fail today: "
                        "lines 'FAMILY FORMAT CHECK' ('#' starts a comment)")
    parser.add_argument("--write-expected", help="write the checks that "
                        "failed to this file, in --expected's format")
    args = parser.parse_args()
    args.build, args.work = os.path.abspath(args.build), \
        os.path.abspath(args.work)
    args.expected_set = set()
    if args.expected:
        for line in open(args.expected):
            words = line.split("#")[0].split(None, 2)
            if words:
                args.expected_set.add((words[0], words[1], words[2].strip()))
    families, formats = args.families.split(","), args.formats.split(",")
    args.check_kinds = args.checks.split(",")
    if set(args.check_kinds) - set(CHECK_KINDS):
        parser.error("unknown check kind: " + ", ".join(
            sorted(set(args.check_kinds) - set(CHECK_KINDS))))
    unknown = sorted(set(families) - set(FAMILIES)) + \
        sorted(set(formats) - set(FORMATS))
    if unknown:
        parser.error("unknown family or format: " + ", ".join(unknown))
    cases = [Case(args, family, fmt, extras_of(args, i, fmt))
             for i, family in enumerate(FAMILIES) if family in families
             for fmt in FORMATS if fmt in formats]
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for case in pool.map(Case.run, cases):
            for line in case.lines:
                print(line)
            sys.stdout.flush()
    wall = time.time() - start
    kinds = []
    for case in cases:
        kinds += [k for k in case.results if k not in kinds]
    table(cases, kinds)
    words = [w for c in cases for w in c.results.values()]
    runs = [r for c in cases for r in c.runs.values()]
    imported = sum(any(r[0] for r in c.runs.values()) for c in cases)
    print("\n%d cases, %d import (some pp-run of theirs succeeds); checks: "
          "%d ok, %d FAIL, %d XFAIL, %d XPASS" % (
              len(cases), imported, words.count("ok"), words.count("FAIL"),
              words.count("XFAIL"), words.count("XPASS")))
    print("%d pp-runs, %.0f s in pp-run, longest %.1f s, %.0f s wall with "
          "%d jobs" % (len(runs), sum(r[2] for r in runs),
                       max((r[2] for r in runs), default=0), wall,
                       args.jobs))
    unexpected = words.count("FAIL") + words.count("XPASS")
    print("%d unexpected results" % unexpected)
    if args.write_expected:
        with open(args.write_expected, "w") as f:
            for case in cases:
                for check, word in case.results.items():
                    if word in ("FAIL", "XFAIL"):
                        f.write("%s %s %s  # %s\n" % (
                            case.family, case.fmt, check,
                            case.details[check][:160]))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

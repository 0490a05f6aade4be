#!/usr/bin/env python3
"""The other half of issue 22's round trip: transformers loads what
`pp-run --save-weights` wrote and gives pp's `--infer` logits.

For each family it fine-tunes the fixture from weights/FAMILY (make_hf_weights.py)
on 2 stages with pp-run, --save-weights to a folder beside a copy of the
checkpoint's config.json, runs pp-run --infer --weights on the saved file,
then loads the folder with the family's transformers class (from_pretrained,
which must report no missing or unexpected keys) and prints the largest
difference of its logits from pp's. Needs the fixture venv (torch,
transformers); CI runs the torch-free half (pretrained-weights.test).

    /work/fixture-venv/bin/python test/models/hf/check_from_pretrained.py \
        BUILD WORK [FAMILY[.FORMAT] ...]
"""

import os
import shutil
import subprocess
import sys
import warnings

import torch
import transformers
from onnx import numpy_helper
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_hf_models as hf  # noqa: E402

FORMAT_FILES = {"traced": ".traced.pt", "pt2": ".pt2",
                "dynamo": ".dynamo-unoptimized.onnx"}


def pp_run(build, *args):
    done = subprocess.run([os.path.join(build, "bin", "pp-run")] +
                          list(args), capture_output=True, text=True)
    if done.returncode:
        sys.exit("pp-run %s failed:\n%s" % (" ".join(args), done.stderr))
    return done.stdout


def check(build, work, family, fmt):
    model = os.path.join(HERE, family + FORMAT_FILES[fmt])
    output = "logits" if fmt == "dynamo" else "output_0"
    shape = [] if fmt != "traced" else ["--input-shape",
                                        "input_ids=?x16xi64"]
    folder = os.path.join(work, family + "." + fmt)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    weights = os.path.join(HERE, "weights", family)
    shutil.copy(os.path.join(weights, "config.json"), folder)
    common = [model, "--cache-dir", os.path.join(work, "cache"),
              "--cost-rates", "default"] + shape
    pp_run(build, *common, "--loss", "cross_entropy:" + output,
           "--data", os.path.join(HERE, "tokens.bin"), "--token-width", "2",
           "--seq-len", "16", "--microbatch-size", "2", "--microbatches", "2",
           "--stages", "2", "--steps", "5", "--weights", weights,
           "--save-weights", os.path.join(folder, "model.safetensors"))
    pp_run(build, *common, "--infer", "--microbatch-size", "2", "--inputs",
           os.path.join(HERE, family + ".input_0.pb"), "--outputs-dir",
           folder, "--weights", folder)
    ours = numpy_helper.to_array(onnx.load_tensor(
        os.path.join(folder, "output_0.pb")))
    base = getattr(transformers, hf.FAMILIES[family][1])
    loaded, info = base.from_pretrained(folder, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v}
    loaded.config._attn_implementation = "eager"
    loaded.eval()
    x = torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(
        os.path.join(HERE, family + ".input_0.pb"))))
    with torch.no_grad():
        theirs = hf.logits_forward(base)(loaded, x).numpy()
    diff = abs(theirs.astype("float64") - ours).max()
    print("%-10s %-7s from_pretrained: %s; max |transformers - pp| %.2g" % (
        family, fmt, problems or "no missing or unexpected keys", diff))
    return not problems and diff <= 1e-5


def main():
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    build, work = sys.argv[1:3]
    cases = sys.argv[3:] or ["%s.%s" % (f, m) for f in hf.FAMILIES
                             for m in FORMAT_FILES]
    results = [check(build, work, *case.split(".")) for case in cases]
    print("%d of %d within 1e-5, no missing or unexpected keys" % (
        sum(results), len(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

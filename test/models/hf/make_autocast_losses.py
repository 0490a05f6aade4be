#!/usr/bin/env python3
"""Writes autocast-bf16.json: each fixture's step-1 loss in PyTorch's bf16
autocast, the reference pp-run --precision bf16 is held to.

For every family of make_hf_models.py (its FAMILY.traced.pt) and for the
byte-level GPT the README trains (../byte-gpt.traced.pt, on the same
tokens.bin in windows of 32 tokens), the step-1 loss of pp-run's defaults
(seed 0, global batch 4: FAMILY.reference.json's step-1 windows; the
byte-level GPT's from pp's sampler, test/E2E/unseen-lm/pp_sampler.py; the
mean cross-entropy over the step's tokens) twice:

  - "f32": in float32, as FAMILY.reference.json has it;
  - "autocast_bf16": the forward under torch.autocast("cpu",
    dtype=torch.bfloat16), the loss in float32 from the logits it returns.

test/E2E/hf-models/run_matrix.py (its bf16 check) and
test/E2E/precision-bf16.test compare pp's bf16 step-1 loss with
"autocast_bf16" within 1e-2 relative (the issue's bound).

CI never runs this script, it only reads what it wrote. Run it with
PyTorch 2.x (scripts/bench.sh's venv has it):

    build/bench-venv/bin/python test/models/hf/make_autocast_losses.py
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ["gpt2", "llama", "llama-gqa", "qwen2", "qwen3", "mistral",
            "phi3", "gpt-neox", "bert"]
# The byte-level GPT's sequence, and pp-run's seed and global batch.
BYTE_GPT_SEQ, SEED, GLOBAL_BATCH = 32, 0, 4

sys.path.insert(0, os.path.join(HERE, "..", "..", "E2E", "unseen-lm"))
import pp_sampler  # noqa: E402


def window_batch(data, windows, seq):
    x = np.stack([data[n * seq:n * seq + seq] for n in windows])
    y = np.stack([data[n * seq + 1:n * seq + seq + 1] for n in windows])
    return torch.from_numpy(x), torch.from_numpy(y)


def losses(model_path, x, y):
    model = torch.jit.load(model_path).eval()
    with torch.no_grad():
        logits = model(x)
        if isinstance(logits, (tuple, list)):
            logits = logits[0]
        f32 = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                              y.reshape(-1)).item()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = model(x)
            if isinstance(low, (tuple, list)):
                low = low[0]
        assert low.dtype == torch.bfloat16, (
            model_path + ": autocast left the logits " + str(low.dtype))
        bf16 = F.cross_entropy(low.float().reshape(-1, low.shape[-1]),
                               y.reshape(-1)).item()
    return {"f32": f32, "autocast_bf16": bf16}


def main():
    torch.set_num_threads(1)
    data = np.fromfile(os.path.join(HERE, "tokens.bin"), "<u2").astype(
        np.int64)
    result = {"torch": torch.__version__}
    for family in FAMILIES:
        reference = json.load(open(os.path.join(
            HERE, family + ".reference.json")))
        step = reference["train"]["steps"][0]
        x, y = window_batch(data, step["windows"], reference["sequence"])
        result[family] = losses(os.path.join(HERE, family + ".traced.pt"),
                                x, y)
        assert abs(result[family]["f32"] - step["loss"]) <= 1e-5 * abs(
            step["loss"]), (family, result[family], step["loss"])
    windows = pp_sampler.training_step(
        SEED, (len(data) - 1) // BYTE_GPT_SEQ, 0, GLOBAL_BATCH)
    x, y = window_batch(data, windows, BYTE_GPT_SEQ)
    result["byte-gpt"] = losses(
        os.path.join(HERE, "..", "byte-gpt.traced.pt"), x, y)
    result["byte-gpt"]["windows"] = windows
    with open(os.path.join(HERE, "autocast-bf16.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    json.dump(result, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

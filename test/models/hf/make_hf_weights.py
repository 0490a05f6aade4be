#!/usr/bin/env python3
"""Writes Hugging Face checkpoints of issue 22 for the issue 21 fixtures.

Per family of make_hf_models.py it builds the same model, moves every
parameter away from the exported values (p + 0.05 * noise, seeded per
family), and writes with transformers' own save_pretrained, so the files
are what a user downloads from the Hub:

  weights/FAMILY/model.safetensors, config.json   save_pretrained (F32)
  weights/FAMILY.logits.pb   transformers' fp32 logits of FAMILY.input_0.pb
                             with these weights (from_pretrained of the
                             folder, the base class)

and for LLaMA also

  weights/llama-sharded/     save_pretrained(max_shard_size="60KB"): shards
                             and model.safetensors.index.json
  weights/llama-bf16/        the same weights saved in bfloat16
  weights/llama-bf16.logits.pb  the fp32 model's logits with the bf16
                             values (from_pretrained(dtype=float32))

The tied names (GPT-2's lm_head, Qwen3's lm_head, BERT's decoder) are
dropped by save_pretrained as on the Hub. Checking that pp-run --infer
--weights reproduces the logits needs no torch (run_matrix.py's `weights`
check). check_from_pretrained.py, beside this script, is the other way:
transformers loading what pp-run --save-weights wrote.

    /work/fixture-venv/bin/python test/models/hf/make_hf_weights.py \
        test/models/hf
"""

import argparse
import os
import shutil
import sys
import warnings

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_hf_models as hf  # noqa: E402


def base_class(family):
    return getattr(transformers, hf.FAMILIES[family][1])


def perturbed(family):
    model = hf.build(family)
    seed = hf.FAMILIES[family][3]
    generator = torch.Generator().manual_seed(200 + seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    return model


def save(model, folder, **options):
    if os.path.exists(folder):
        shutil.rmtree(folder)
    model.save_pretrained(folder, **options)
    # The subclass's name would make AutoModel look for a class that does
    # not exist; the base class is what loads it.
    config = os.path.join(folder, "config.json")
    text = open(config).read().replace("Logits\"", "\"")
    open(config, "w").write(text)


def logits_of(family, folder, x, **options):
    model = base_class(family).from_pretrained(folder, **options)
    model.config._attn_implementation = "eager"
    model.eval()
    with torch.no_grad():
        return hf.logits_forward(base_class(family))(model, x)


def make(family, out_dir, data):
    weights = os.path.join(out_dir, "weights")
    model = perturbed(family)
    x, _ = hf.window_batch(data, [0, 1])
    folder = os.path.join(weights, family)
    save(model, folder)
    with torch.no_grad():
        want = model(x)
    got = logits_of(family, folder, x)
    assert (got - want).abs().max().item() == 0, family + " reloads changed"
    hf.write_tensor(folder + ".logits.pb", got.numpy(), "logits")
    print("%s: %d bytes" % (folder, os.path.getsize(
        os.path.join(folder, "model.safetensors"))))
    if family != "llama":
        return
    save(model, os.path.join(weights, "llama-sharded"),
         max_shard_size="60KB")
    half = os.path.join(weights, "llama-bf16")
    save(model.to(torch.bfloat16), half)
    hf.write_tensor(half + ".logits.pb",
                    logits_of(family, half, x, dtype=torch.float32).numpy(),
                    "logits")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("families", nargs="*", default=list(hf.FAMILIES))
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    data = hf.tokens(args.out_dir)
    for family in args.families:
        make(family, args.out_dir, data)


if __name__ == "__main__":
    main()

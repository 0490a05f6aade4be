#!/usr/bin/env python3
"""Writes the torch.export archives (.pt2) of pp's torch.export tests.

torch.export needs torch 2.x, which CI lacks, so the archives are committed;
CI's tests derive damaged copies of them with the standard library alone
(damage_archive.py). Files, into the output folder:

  tied.pt2     a small module: an embedding tied to the output head (one
               storage, two parameter names), a LayerNorm, a persistent
               buffer and a non-persistent one (which torch.export stores
               as a constant), a symbolic batch;
  unknown.pt2  an op pp does not import (cumsum) on the input;
  newer.pt2    an op LibTorch 1.13 lacks (rms_norm, ATen's since 2.4);
  attention.pt2, attention.input_0.pb, attention.output_0.pb
               scaled_dot_product_attention (also newer than LibTorch
               1.13, which pp rebuilds) with a boolean mask, the default
               scale and a float mask, and PyTorch's output for an input;
  causal.pt2   scaled_dot_product_attention with is_causal=True (refused);
  gpt.pt2, llama.pt2
               test/models/make_transformers.py's gpt and llama with the
               seeds that script uses (the weights of test/models/gpt.*,
               llama.*), batch symbolic, exported with gradients on as for
               training.

    /work/fixture-venv/bin/python test/Frontends/TorchExport/Inputs/make_inputs.py \\
        test/Frontends/TorchExport/Inputs
"""
import argparse
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "models"))
import make_transformers  # noqa: E402


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight
        self.register_buffer("scale", torch.tensor([2.0, 1.0, 0.5, 1.0]))
        self.register_buffer("shift", torch.full((4,), 0.25),
                             persistent=False)

    def forward(self, ids):
        h = self.norm(self.embed(ids)) * self.scale + self.shift
        return self.head(torch.softmax(h, -1).transpose(0, 1)
                         .transpose(0, 1))


class Unknown(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 0)


class Newer(nn.Module):
    def forward(self, x):
        return nn.functional.rms_norm(x, [4])


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(8, 8)
        self.register_buffer("mask", torch.rand(3, 3) > 0.3)
        self.register_buffer("bias", torch.randn(3, 3))

    def forward(self, x):
        F = nn.functional
        h = F.scaled_dot_product_attention(self.query(x), x, x,
                                           attn_mask=self.mask | torch.eye(
                                               3, dtype=torch.bool))
        return F.scaled_dot_product_attention(h, x, x, attn_mask=self.bias,
                                              scale=0.5)


class Causal(nn.Module):
    def forward(self, x):
        return nn.functional.scaled_dot_product_attention(x, x, x,
                                                          is_causal=True)


def write_tensor(tensor, path):
    from onnx import numpy_helper
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(tensor.detach().numpy())
                .SerializeToString())


def save(model, example, dynamic, path):
    program = torch.export.export(model, example, dynamic_shapes=dynamic)
    torch.export.save(program, path)
    print("%s: %d bytes" % (path, os.path.getsize(path)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output_dir", nargs="?", default=HERE)
    out = parser.parse_args().output_dir
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    save(Tied().eval(), (torch.zeros(2, 3, dtype=torch.long),),
         {"ids": {0: batch}}, os.path.join(out, "tied.pt2"))
    save(Unknown(), (torch.zeros(4),), None, os.path.join(out, "unknown.pt2"))
    save(Newer(), (torch.zeros(2, 4),), None, os.path.join(out, "newer.pt2"))
    attention, x = Attention().eval(), torch.randn(2, 2, 3, 8)
    save(attention, (x,), None, os.path.join(out, "attention.pt2"))
    write_tensor(x, os.path.join(out, "attention.input_0.pb"))
    with torch.no_grad():
        write_tensor(attention(x), os.path.join(out, "attention.output_0.pb"))
    save(Causal(), (x,), None, os.path.join(out, "causal.pt2"))
    for index, (name, cls) in enumerate(make_transformers.MODELS.items()):
        if name == "encoder":
            continue
        torch.manual_seed(20261130 + index)
        model = cls().eval()
        tokens = torch.zeros(make_transformers.BATCH, make_transformers.SEQ,
                             dtype=torch.long)
        save(model, (tokens,), {"tokens": {0: batch}},
             os.path.join(out, name + ".pt2"))


if __name__ == "__main__":
    main()

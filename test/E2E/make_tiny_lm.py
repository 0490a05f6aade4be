#!/usr/bin/python3
"""Writes a tiny TorchScript language model for pp-torch-reference's tests.

Usage: make_tiny_lm.py OUTPUT_DIR

forward(tokens, features) takes int64 tokens [batch, 5] below 11 (they index
an embedding of 11 rows) and float32 features [batch, 3], and returns a
tuple: logits [batch, 5, 11] and the mean activation [batch, 5]. Writes it
traced (tiny_lm.traced.pt), scripted (tiny_lm.scripted.pt) and exported to
ONNX opset 14 (tiny_lm.onnx, inputs and outputs named as pp names the
module's), with fixed seeds; a dropout that eval mode turns off sits in the
middle, between two LayerNorms whose equal initial weights the export
merges.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, SEQ, FEATURES, WIDTH = 11, 5, 3, 8


class TinyLm(nn.Module):
    def __init__(self):
        super().__init__()
        # Through F.embedding: scripted, it guards the call with branches
        # on constants (`if max_norm is not None`).
        self.table = nn.Parameter(torch.randn(VOCAB, WIDTH))
        self.features = nn.Linear(FEATURES, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.drop = nn.Dropout(0.5)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens, features):
        x = F.embedding(tokens, self.table) + \
            self.features(features).unsqueeze(1)
        x = self.drop(F.gelu(self.norm(x), approximate="tanh"))
        return self.head(self.norm2(x)), x.mean(-1)


def main():
    out = sys.argv[1]
    torch.manual_seed(5)
    model = TinyLm().eval()
    tokens = torch.randint(0, VOCAB, (2, SEQ))
    features = torch.randn(2, FEATURES)
    traced = torch.jit.trace(model, (tokens, features))
    torch.jit.save(traced, os.path.join(out, "tiny_lm.traced.pt"))
    torch.jit.save(torch.jit.script(model), os.path.join(out, "tiny_lm.scripted.pt"))
    torch.onnx.export(model, (tokens, features), os.path.join(out, "tiny_lm.onnx"),
                      input_names=["tokens", "features"],
                      output_names=["output_0", "output_1"], opset_version=14,
                      do_constant_folding=True)


if __name__ == "__main__":
    main()

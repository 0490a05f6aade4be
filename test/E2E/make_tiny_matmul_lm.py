#!/usr/bin/python3
"""Writes a TorchScript model of ops pp trains today, for gradient tests.

Usage: make_tiny_matmul_lm.py OUTPUT_DIR

forward(features) takes float32 features [batch, 5, 3] and returns
LM-style logits [batch, 5, 11] and the last hidden state [batch, 5, 8]
through matmuls, tanh blocks in a ModuleList (qualified parameter names
blocks.0.w, ...) and a softmax. Writes tiny_matmul_lm.traced.pt,
tiny_matmul_lm.scripted.pt and its ONNX export tiny_matmul_lm.onnx (opset
14, names as pp gives the module's), with a fixed seed.
"""
import os
import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8) * 0.3)
        self.b = nn.Parameter(torch.randn(8) * 0.1)

    def forward(self, x):
        return torch.tanh(x @ self.w + self.b)


class TinyMatmulLm(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(3, 8) * 0.3)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Parameter(torch.randn(8, 11) * 0.3)

    def forward(self, features):
        x = features @ self.proj
        for block in self.blocks:
            x = block(x)
        return torch.softmax(x, -1) @ self.head, x


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = TinyMatmulLm()
    example = torch.randn(2, 5, 3)
    torch.jit.save(torch.jit.trace(model, (example,)),
                   os.path.join(out, "tiny_matmul_lm.traced.pt"))
    torch.jit.save(torch.jit.script(model),
                   os.path.join(out, "tiny_matmul_lm.scripted.pt"))
    torch.onnx.export(model, (example,), os.path.join(out, "tiny_matmul_lm.onnx"),
                      input_names=["features"],
                      output_names=["output_0", "output_1"], opset_version=14,
                      dynamic_axes={"features": {0: "batch"}},
                      do_constant_folding=True)


if __name__ == "__main__":
    main()

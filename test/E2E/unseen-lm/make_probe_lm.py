#!/usr/bin/python3
"""A small decoder pp's tests never saw, for probing data parallelism.

RMSNorm (written out), 3 heads over d_model 48, learned positions, residual
branches scaled by 1/sqrt(2 * layers), an MLP of ratio 3 with SiLU, no
biases anywhere, 2 layers, vocabulary 257 (pp-data's byte tokenizer),
sequence 16. Writes probe-lm.pt (torch.jit.trace) and probe-lm.onnx
(opset 17, symbolic batch) plus probe-lm.init.pt (the state dict).

    /usr/bin/python3 make_probe_lm.py OUTDIR
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D, HEADS, LAYERS, SEQ, RATIO = 257, 48, 3, 2, 16, 3
RESIDUAL = 1.0 / math.sqrt(2 * LAYERS)


class RmsNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D) + 0.05 * torch.randn(D))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) \
            * self.weight


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1 = RmsNorm()
        self.qkv = nn.Linear(D, 3 * D, bias=False)
        self.o = nn.Linear(D, D, bias=False)
        self.n2 = RmsNorm()
        self.up = nn.Linear(D, RATIO * D, bias=False)
        self.down = nn.Linear(RATIO * D, D, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        h = self.n1(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q.reshape(b, t, HEADS, c // HEADS).permute(0, 2, 1, 3)
        k = k.reshape(b, t, HEADS, c // HEADS).permute(0, 2, 3, 1)
        v = v.reshape(b, t, HEADS, c // HEADS).permute(0, 2, 1, 3)
        s = torch.matmul(q, k) / math.sqrt(c // HEADS)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        s = s.masked_fill(causal, -1e9)
        y = torch.matmul(torch.softmax(s, dim=-1), v)
        y = y.permute(0, 2, 1, 3).reshape(b, t, c)
        x = x + RESIDUAL * self.o(y)
        return x + RESIDUAL * self.down(F.silu(self.up(self.n2(x))))


class ProbeLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(0.02 * torch.randn(SEQ, D))
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.norm = RmsNorm()
        self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.tok(tokens) * 0.5 + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def build():
    torch.manual_seed(4242)
    return ProbeLM().eval()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    torch.set_num_threads(1)
    model = build()
    tokens = torch.randint(0, VOCAB, (2, SEQ))
    torch.save(model.state_dict(), os.path.join(out, "probe-lm.init.pt"))
    traced = torch.jit.trace(model, (tokens,), check_trace=False)
    torch.jit.save(traced, os.path.join(out, "probe-lm.pt"))
    torch.onnx.export(model, (tokens,), os.path.join(out, "probe-lm.onnx"),
                      opset_version=17, input_names=["tokens"],
                      output_names=["logits"],
                      dynamic_axes={"tokens": {0: "batch"},
                                    "logits": {0: "batch"}})


if __name__ == "__main__":
    main()

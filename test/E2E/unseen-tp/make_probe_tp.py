#!/usr/bin/python3
"""A small decoder pp's tests never saw, for probing tensor parallelism.

GPT-NeoX-style parallel residual blocks (attention and MLP both read one
LayerNorm of the stream and are added to it together), separate q, k and v
projections with biases and 4 heads over d_model 64, exact (erf) GELU in
an MLP of ratio 3, learned positions, a final LayerNorm and an LM head tied
to the token embedding, vocabulary 258 (pp-data's 257 byte tokens, padded
to an even count), 2 layers. Writes probe-tp.pt
(torch.jit.script, so that it imports at any sequence length up to 256) and
probe-tp.init.pt (the state dict).

    /usr/bin/python3 make_probe_tp.py OUTDIR
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D, HEADS, LAYERS, MAX_SEQ, RATIO = 258, 64, 4, 2, 256, 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = HEADS
        self.norm = nn.LayerNorm(D)
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)
        self.o = nn.Linear(D, D)
        self.up = nn.Linear(D, RATIO * D)
        self.down = nn.Linear(RATIO * D, D)

    def forward(self, x):
        b, t, c = x.shape
        h = self.norm(x)
        shape = [b, t, self.heads, c // self.heads]
        q = self.q(h).view(shape).transpose(1, 2)
        k = self.k(h).view(shape).transpose(1, 2)
        v = self.v(h).view(shape).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(c // self.heads)
        causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        attn = F.softmax(scores + causal, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).reshape(b, t, c)
        return x + self.o(y) + self.down(F.gelu(self.up(h)))


class ProbeTp(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(MAX_SEQ, D)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, tokens):
        positions = torch.arange(0, tokens.size(1), dtype=torch.long)
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main():
    out = sys.argv[1]
    torch.manual_seed(13)
    model = ProbeTp().eval()
    torch.jit.save(torch.jit.script(model), os.path.join(out, "probe-tp.pt"))
    torch.save(model.state_dict(), os.path.join(out, "probe-tp.init.pt"))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Exports small transformers with torch.onnx.export (PyTorch 1.13).

Usage: export_transformers.py OPSET DIR

Writes DIR/{gpt,llama,encoder}.onnx at ONNX opset OPSET, each with the
input it was run on (DIR/NAME.input.npy) and PyTorch's output for it
(DIR/NAME.output.npy, float64):
- gpt: a GPT-style causal decoder (token and position embeddings, pre-LN,
  causal mask from a bool buffer filled with -inf through Where, tanh
  GELU, dropout), exported for training (Dropout nodes with
  training_mode) so that the graph holds what training needs;
- llama: a LLaMA-style block (RMSNorm, SiLU MLP, rotary embedding over
  cos/sin buffers, mask from triu);
- encoder: torch.nn.TransformerEncoder (norm_first, ReLU).
"""
import math
import sys

import numpy as np
import torch
import torch.nn as nn

D, HEADS, SEQ, VOCAB, BATCH = 16, 2, 8, 32, 2


class GptBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        causal = torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, SEQ, SEQ))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = torch.where(self.causal[:, :, :t, :t], att, torch.tensor(float("-inf")))
        att = self.drop(torch.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, D), nn.Embedding(SEQ, D)
        self.blocks = nn.Sequential(GptBlock(), GptBlock())
        self.lnf, self.head = nn.LayerNorm(D), nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        positions = torch.arange(0, ids.size(1), dtype=torch.long).unsqueeze(0)
        return self.head(self.lnf(self.blocks(self.wte(ids) + self.wpe(positions))))


class RmsNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(D) + 0.5)

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = D // HEADS
        self.norm1, self.norm2 = RmsNorm(), RmsNorm()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(D, 2 * D, bias=False), nn.Linear(D, 2 * D, bias=False)
        self.down = nn.Linear(2 * D, D, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(SEQ).float(), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", angles.cos()[None, None])
        self.register_buffer("sin_cached", angles.sin()[None, None])

    def forward(self, x):
        b, t, c = x.shape
        h = self.norm1(x)
        q, k, v = (p(h).view(b, t, HEADS, self.head_dim).transpose(1, 2) for p in (self.q, self.k, self.v))
        cos, sin = self.cos_cached[:, :, :t, ...], self.sin_cached[:, :, :t, ...]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        att = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        att = torch.softmax(att + torch.full((t, t), float("-inf")).triu(1), dim=-1)
        x = x + self.o((att @ v).transpose(1, 2).reshape(b, t, c))
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


def main():
    opset, directory = int(sys.argv[1]), sys.argv[2]
    torch.manual_seed(0)
    encoder_layer = nn.TransformerEncoderLayer(D, HEADS, 2 * D, dropout=0.0, batch_first=True, norm_first=True)
    models = {
        "gpt": (Gpt(), torch.randint(0, VOCAB, (BATCH, SEQ)), "ids"),
        "llama": (nn.Sequential(LlamaBlock(), LlamaBlock()), torch.randn(BATCH, SEQ, D), "x"),
        "encoder": (nn.TransformerEncoder(encoder_layer, 2), torch.randn(BATCH, SEQ, D), "x"),
    }
    for name, (model, example, input_name) in models.items():
        model.eval()
        with torch.no_grad():
            np.save(f"{directory}/{name}.output.npy", model(example).double().numpy())
        np.save(f"{directory}/{name}.input.npy", example.numpy())
        options = {}
        if name == "gpt":
            options = dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        torch.onnx.export(model, (example,), f"{directory}/{name}.onnx", opset_version=opset,
                          input_names=[input_name], output_names=["y"],
                          dynamic_axes={input_name: {0: "batch"}}, **options)


main()

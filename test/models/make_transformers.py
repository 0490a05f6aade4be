#!/usr/bin/python3
"""Writes the small transformer fixtures of pp's frontend tests.

Three models, each with fixed seeds, d_model 32, 2 layers, vocabulary 64,
sequence 8, taking `tokens` (int64 [batch, 8]) and returning `logits`
(float32 [batch, 8, 64]):

  encoder  a stack of nn.TransformerEncoderLayer (batch_first, ReLU, dropout
           0.1 that eval mode turns off) between an embedding and a head;
  gpt      a GPT-style causal decoder: token and position embeddings, pre-LN
           blocks, causal mask, tanh GELU, an LM head not tied to the
           embedding;
  llama    LLaMA-style blocks: RMSNorm written out as
           x * rsqrt(mean(x^2) + eps) * w, rotary embeddings over cos/sin
           tables, causal attention, a SiLU-gated MLP.

Each is written as NAME.traced.pt (torch.jit.trace), NAME.scripted.pt
(torch.jit.script), NAME.opset14.onnx and NAME.opset17.onnx
(torch.onnx.export, do_constant_folding=True, symbolic batch "batch"),
plus NAME.input_0.pb and NAME.output_0.pb: a batch of 2 token rows and the
logits PyTorch computes for them, as ONNX TensorProto files.

    /usr/bin/python3 test/models/make_transformers.py test/models
"""
import argparse
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

VOCAB, D_MODEL, HEADS, LAYERS, SEQ, BATCH = 64, 32, 4, 2, 8, 2


class Encoder(nn.Module):
    """Embedding, TransformerEncoderLayer stack, linear head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=64,
                                       dropout=0.1, batch_first=True)
            for _ in range(LAYERS)])
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = HEADS
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        mask = torch.tril(torch.ones(t, t))
        scores = scores.masked_fill(mask == 0, float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class GptBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.attn = CausalSelfAttention()
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.fc = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.out = nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(SEQ, D_MODEL)
        self.blocks = nn.ModuleList([GptBlock() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, tokens):
        positions = torch.arange(0, tokens.size(1), dtype=torch.long)
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class RmsNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.eps = 1e-6
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(D_MODEL))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        head = D_MODEL // HEADS
        self.heads = HEADS
        self.attn_norm = RmsNorm()
        self.wq = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.wk = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.wv = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.wo = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.mlp_norm = RmsNorm()
        self.w1 = nn.Linear(D_MODEL, 64, bias=False)
        self.w3 = nn.Linear(D_MODEL, 64, bias=False)
        self.w2 = nn.Linear(64, D_MODEL, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head, 2).float() / head))
        angles = torch.outer(torch.arange(SEQ).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, x):
        b, t, c = x.shape
        h = self.attn_norm(x)
        shape = [b, t, self.heads, c // self.heads]
        q = self.wq(h).view(shape).transpose(1, 2)
        k = self.wk(h).view(shape).transpose(1, 2)
        v = self.wv(h).view(shape).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(c // self.heads)
        causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        attn = F.softmax(scores + causal, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).reshape(b, t, c)
        x = x + self.wo(y)
        h = self.mlp_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.blocks = nn.ModuleList([LlamaBlock() for _ in range(LAYERS)])
        self.norm = RmsNorm()
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm(x))


MODELS = {"encoder": Encoder, "gpt": Gpt, "llama": Llama}


def write_tensor(tensor, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(tensor.detach().numpy())
                .SerializeToString())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output_dir", nargs="?", default=".")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for index, (name, cls) in enumerate(MODELS.items()):
        torch.manual_seed(20261130 + index)
        model = cls().eval()
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.long)
        with torch.no_grad():
            logits = model(tokens)
        out = lambda suffix: os.path.join(args.output_dir, name + suffix)
        write_tensor(tokens, out(".input_0.pb"))
        write_tensor(logits, out(".output_0.pb"))
        # Traced with gradients on, as for training: under no_grad,
        # TransformerEncoderLayer takes its fused inference-only fast path
        # (which is also why the trace's re-run check is off).
        traced = torch.jit.trace(model, (tokens,), check_trace=False)
        torch.jit.save(traced, out(".traced.pt"))
        torch.jit.save(torch.jit.script(model), out(".scripted.pt"))
        for opset in (14, 17):
            torch.onnx.export(model, (tokens,), out(".opset%d.onnx" % opset),
                              input_names=["tokens"], output_names=["logits"],
                              dynamic_axes={"tokens": {0: "batch"},
                                            "logits": {0: "batch"}},
                              opset_version=opset, do_constant_folding=True)


if __name__ == "__main__":
    main()

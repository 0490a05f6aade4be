#!/usr/bin/python3
"""Writes small TorchScript modules (scripted) that exercise one family of
ops each, or one import error, into the directory given:

    /usr/bin/python3 make_modules.py OUTPUT_DIR

Every forward takes `x` (float32) and sometimes `y`; the tests give their
shapes with --input-shape.
"""
import os
import sys
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Arithmetic(nn.Module):
    """add/sub with alpha, rsub, mul, div, pow with numbers and tensors."""

    def forward(self, x, y):
        a = torch.add(x, y, alpha=2.0)
        b = torch.sub(a, 1.5)
        c = torch.rsub(b, 3)
        d = c * y / 4
        return torch.pow(d, 2.0) + torch.pow(x, y)


class Unary(nn.Module):
    def forward(self, x):
        return (torch.exp(x) + torch.log(x) + torch.sqrt(x) + torch.rsqrt(x)
                + torch.erf(x) + torch.tanh(x) + torch.sigmoid(x) - x.neg()
                + F.gelu(x) + F.silu(x) + torch.relu(x))


class Contractions(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 6))
        self.bias = nn.Parameter(torch.randn(6))
        self.scores = nn.Parameter(torch.randn(3, 1, 1))

    def forward(self, x, y):
        a = torch.addmm(self.bias, x, self.weight, beta=0.5, alpha=2.0)
        b = torch.bmm(y, y.transpose(1, 2))
        c = torch.baddbmm(self.scores, y, y.transpose(1, 2))
        return a, b + c, torch.matmul(y, y.transpose(-1, -2))


class Reductions(nn.Module):
    def forward(self, x):
        return (x.mean(), x.sum(), x.mean(dim=[0, 2], keepdim=True),
                torch.sum(x, -1), F.log_softmax(x, dim=1),
                F.softmax(x, dim=-1))


class DtypeSoftmax(nn.Module):
    """softmax, log_softmax and sum computing in the dtype given, as every
    Hugging Face eager attention calls softmax."""

    def forward(self, x):
        return (F.softmax(x, dim=-1, dtype=torch.float64),
                torch.log_softmax(x, 1, dtype=torch.float32),
                x.sum(-1, dtype=torch.float64))


class IntegerSoftmax(nn.Module):
    def forward(self, x):
        return F.softmax(x, dim=-1, dtype=torch.int64)


class Shapes(nn.Module):
    def forward(self, x):
        a = x.flatten(1).unsqueeze(0).squeeze(0)
        b = x.permute(2, 0, 1).contiguous().reshape(-1, 6)
        c = x.view(6, 4).t()
        d = x.transpose(0, 2).squeeze()
        e = x[1].unsqueeze(-1).expand(3, 4, 5)
        return a, b, c, d, e


class Pieces(nn.Module):
    def forward(self, x):
        p, q = x.chunk(2, dim=-1)
        r, s, t = x.split([1, 1, 2], dim=2)
        u = x[:, 1:3, ::2]
        v = x.select(1, -1)
        return torch.cat([q, p], dim=-1), torch.cat((t, s, r), 2), u, v


class Masks(nn.Module):
    def forward(self, x, y):
        causal = torch.ones(x.size(-1), x.size(-1)).triu(1) > 0
        a = x.masked_fill(causal, float("-inf"))
        b = torch.where(causal, x, y)
        c = torch.tril(x, -1) + torch.triu(y)
        d = torch.where(causal, x, 0.0)
        return a, b, c, d


class Dropout(nn.Module):
    """A module saved in training mode: its dropouts stay."""

    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.drop(x) + F.dropout(x, 0.5, self.training)


class Dtypes(nn.Module):
    def forward(self, x, y):
        return x.to(torch.float64), y.float() * x, x.type_as(y)


class Factories(nn.Module):
    def forward(self, x):
        n = x.size(0)
        ramp = torch.arange(n).float() + torch.zeros(n) * 2
        return x + ramp + torch.full((n,), 3.0) + torch.ones(n) // 2


class DevicePositions(nn.Module):
    """nanoGPT's positions: arange on the input's device."""

    def __init__(self):
        super().__init__()
        self.position = nn.Embedding(8, 4)

    def forward(self, x):
        t = x.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=x.device)
        return x + self.position(pos) + float(x.is_meta)


class ShapeFactories(nn.Module):
    """Factories that take only a tensor's shape and element type."""

    def __init__(self):
        super().__init__()
        self.types = nn.Embedding(2, 4)

    def forward(self, x, tokens):
        segments = self.types(torch.zeros_like(tokens))
        return (x + segments, torch.ones_like(x), torch.full_like(x, 2.5),
                x.new_zeros((x.size(0), 2)), x.new_ones(3, dtype=torch.long),
                x.new_full([2], 7.0))


def transformer_encoder():
    """nn.TransformerEncoder itself: optional mask arguments, pre-LN, GELU."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                       activation="gelu", norm_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


class DataIf(nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            return x
        return -x


class DataLoop(nn.Module):
    def forward(self, x):
        while bool(x.sum() < 10):
            x = x * 2
        return x


class HugeLoop(nn.Module):
    """A loop of a billion iterations, which pp would unroll."""

    def forward(self, x):
        for _ in range(1000000000):
            x = x + 1
        return x


class NestedLoops(nn.Module):
    """Loops of a thousand iterations each, a million in all, on numbers."""

    def forward(self, x):
        n = 0
        for i in range(1000):
            for j in range(1000):
                n += i * j
        return x + n


class HugeConstant(nn.Module):
    """A constant of ten billion elements computed at import."""

    def forward(self, x):
        return x + torch.zeros(100000, 100000).sum()


class Unknown(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 0)


class InPlace(nn.Module):
    """An in-place op whose result nothing uses: leaving it out would be
    wrong."""

    def forward(self, x):
        y = x * 2
        y.add_(1)
        return y


class ByteBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.ones(4, dtype=torch.uint8))

    def forward(self, x):
        return x + self.table


class MetaConstant(nn.Module):
    """A constant on the meta device, which holds no values."""

    def forward(self, x):
        return x + torch.zeros(x.size(0), device="meta")


class Raises(nn.Module):
    def forward(self, x):
        if x.dim() != 2:
            raise ValueError("expected a matrix")
        return x


class ListArgument(nn.Module):
    def forward(self, xs: List[torch.Tensor]):
        return xs[0]


MODULES = {
    "arithmetic": Arithmetic, "unary": Unary, "contractions": Contractions,
    "reductions": Reductions, "dtype_softmax": DtypeSoftmax,
    "integer_softmax": IntegerSoftmax, "shapes": Shapes, "pieces": Pieces,
    "masks": Masks, "dropout": Dropout, "dtypes": Dtypes,
    "factories": Factories, "device_positions": DevicePositions,
    "shape_factories": ShapeFactories, "data_if": DataIf, "data_loop": DataLoop,
    "huge_loop": HugeLoop, "nested_loops": NestedLoops,
    "huge_constant": HugeConstant,
    "unknown": Unknown, "in_place": InPlace, "byte_buffer": ByteBuffer,
    "meta_constant": MetaConstant, "raises": Raises,
    "list_argument": ListArgument, "transformer_encoder": transformer_encoder,
    "transformer_encoder_train": transformer_encoder,
}

if __name__ == "__main__":
    for name, cls in MODULES.items():
        module = cls()
        if name not in ("dropout", "transformer_encoder_train"):
            module.eval()
        torch.jit.save(torch.jit.script(module),
                       os.path.join(sys.argv[1], name + ".pt"))

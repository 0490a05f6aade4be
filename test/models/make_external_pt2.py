#!/usr/bin/env python3
"""Writes make_external_mlp.py's MLP as a torch.export archive.

    PYTHON_WITH_TORCH test/models/make_external_pt2.py DIR

Reads DIR/mlp.onnx (and its external DIR/mlp.onnx.data, memory-mapped) and
writes DIR/mlp.pt2: torch.export.save of the same function, x [batch, W] ->
L x (Linear without bias, then ReLU but after the last) -> y, each Linear's
weight the transpose of the ONNX MatMul's. Needs PyTorch 2.x (a
benchmark-only dependency: scripts/bench-scale.sh runs it from its
benchmark venv); nothing it writes is committed.
"""
import os
import sys

import numpy as np
import onnx
import torch

if len(sys.argv) != 2:
    sys.exit(__doc__)
folder = sys.argv[1]
model = onnx.load(os.path.join(folder, "mlp.onnx"), load_external_data=False)
data = np.memmap(os.path.join(folder, "mlp.onnx.data"), dtype=np.uint8,
                 mode="r")


def weight(tensor):
    """The [W, W] f32 weight of external initializer `tensor`, as stored."""
    entries = {e.key: e.value for e in tensor.external_data}
    offset, length = int(entries["offset"]), int(entries["length"])
    return data[offset:offset + length].view(np.float32).reshape(
        tuple(tensor.dims))


layers = []
for tensor in model.graph.initializer:
    stored = weight(tensor)
    linear = torch.nn.Linear(stored.shape[0], stored.shape[1], bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(np.ascontiguousarray(stored.T)))
    layers += [linear, torch.nn.ReLU()]
mlp = torch.nn.Sequential(*layers[:-1]).eval()
width = layers[0].in_features
batch = torch.export.Dim("batch", min=1, max=1 << 16)
program = torch.export.export(mlp, (torch.zeros(2, width),),
                              dynamic_shapes=({0: batch},))
torch.export.save(program, os.path.join(folder, "mlp.pt2"))

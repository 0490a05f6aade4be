#!/usr/bin/python3
"""Writes a large MLP that keeps its weights in ONNX external data.

    /usr/bin/python3 test/models/make_external_mlp.py DIR --layers L --width W

DIR/mlp.onnx is x [batch, W] -> L x (MatMul by a W x W weight, then Relu
but after the last) -> y, its weights (L * W * W f32, from a fixed NumPy
seed) in DIR/mlp.onnx.data, one after another, as
onnx.save_model(..., save_as_external_data=True) lays them out. The weights
are written a layer at a time (never all in memory), so tests and
scripts/bench-scale.sh make models of any size at run time; none is
committed.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

parser = argparse.ArgumentParser()
parser.add_argument("dir")
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--width", type=int, default=64)
args = parser.parse_args()
L, W = args.layers, args.width
rng = np.random.default_rng(20261201)
os.makedirs(args.dir, exist_ok=True)
data_name = "mlp.onnx.data"

initializers, nodes = [], []
with open(os.path.join(args.dir, data_name), "wb") as data:
    for layer in range(L):
        weight = rng.random((W, W), dtype=np.float32)
        weight -= 0.5
        weight *= 2 / np.sqrt(W)
        offset = data.tell()
        weight.tofile(data)
        del weight
        tensor = TensorProto(name=f"w{layer}", data_type=TensorProto.FLOAT,
                             dims=[W, W],
                             data_location=TensorProto.EXTERNAL)
        for key, value in [("location", data_name), ("offset", str(offset)),
                           ("length", str(4 * W * W))]:
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        initializers.append(tensor)
        into = "x" if layer == 0 else f"a{layer - 1}"
        last = layer == L - 1
        nodes.append(helper.make_node("MatMul", [into, f"w{layer}"],
                                      ["y" if last else f"h{layer}"],
                                      name=f"fc{layer}"))
        if not last:
            nodes.append(helper.make_node("Relu", [f"h{layer}"],
                                          [f"a{layer}"], name=f"relu{layer}"))

graph = helper.make_graph(
    nodes, "external_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", W])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", W])],
    initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save_model(model, os.path.join(args.dir, "mlp.onnx"))

#!/usr/bin/python3
"""Writes a long chain of nodes, for how pp scales with the node count.

    /usr/bin/python3 test/models/make_chain.py OUT.onnx --nodes N --width W

x [batch, W] -> N nodes -> y: every fourth node a MatMul by a W x W weight
of its own, the others Tanh, Sigmoid and Relu in turn (the cheap ops that
dominate a transformer's node count). Weights from a fixed NumPy seed;
written at test or bench time, never committed.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

parser = argparse.ArgumentParser()
parser.add_argument("output")
parser.add_argument("--nodes", type=int, default=20000)
parser.add_argument("--width", type=int, default=16)
args = parser.parse_args()
N, W = args.nodes, args.width
rng = np.random.default_rng(20261201)

nodes, initializers = [], []
value = "x"
for i in range(N):
    out = "y" if i == N - 1 else f"v{i}"
    if i % 4 == 0:
        weight = ((rng.random((W, W), dtype=np.float32) - 0.5) *
                  (2 / np.sqrt(W))).astype(np.float32)
        initializers.append(numpy_helper.from_array(weight, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [value, f"w{i}"], [out],
                                      name=f"n{i}"))
    else:
        op = ("Tanh", "Sigmoid", "Relu")[i % 4 - 1]
        nodes.append(helper.make_node(op, [value], [out], name=f"n{i}"))
    value = out

graph = helper.make_graph(
    nodes, "chain",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", W])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", W])],
    initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save_model(model, args.output)

#!/usr/bin/python3
"""Writes DIR/tiny-lm.onnx, a language model shaped like the last layers of
a transformer LM, for test/E2E/lm-cross-entropy.test: int64 token ids
[batch, 3] (a symbolic batch) index an embedding table (Gather) of 17
rows, a MatMul with bias and Tanh mix each position, and a MatMul head
gives logits [batch, 3, 13] over 13 classes (fewer than the table's rows,
so that ids drawn below the class count instead of the rows would show).

Usage: make_tiny_lm.py DIR
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(3)


def weight(name, *shape):
    return numpy_helper.from_array(
        rng.uniform(-0.5, 0.5, size=shape).astype(np.float32), name)


initializers = [weight("wte", 17, 8), weight("mix.weight", 8, 8),
                weight("mix.bias", 8), weight("head.weight", 8, 13)]
nodes = [
    helper.make_node("Gather", ["wte", "ids"], ["embedded"], name="/wte/Gather",
                     axis=0),
    helper.make_node("MatMul", ["embedded", "mix.weight"], ["mixed"],
                     name="/mix/MatMul"),
    helper.make_node("Add", ["mixed", "mix.bias"], ["biased"], name="/mix/Add"),
    helper.make_node("Tanh", ["biased"], ["hidden"], name="/act/Tanh"),
    helper.make_node("MatMul", ["hidden", "head.weight"], ["logits"],
                     name="/head/MatMul"),
]
graph = helper.make_graph(
    nodes, "tiny-lm",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 3])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                   ["batch", 3, 13])],
    initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1] + "/tiny-lm.onnx")

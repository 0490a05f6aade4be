#!/usr/bin/python3
"""Writes two models whose names are not plain ASCII into DIR, for
test/Frontends/ONNX/utf8-names.test.

utf8.onnx: Gemm then Relu, with UTF-8 names (node "gemm-é", weight "wé",
hidden tensor "hé" that crosses the stage boundary of a 2-stage pipeline,
output "yé").
invalid-utf8.onnx: the same model with node name bytes that are not UTF-8
(b"gemm\\xc3(": a lead byte without its continuation).

Usage: make_named_models.py DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto as T, helper, numpy_helper


def model(node_name):
    rng = np.random.default_rng(3)
    weight = numpy_helper.from_array(
        rng.uniform(-0.5, 0.5, size=(4, 3)).astype(np.float32), "wé")
    bias = numpy_helper.from_array(np.zeros(4, np.float32), "b")
    nodes = [
        helper.make_node("Gemm", ["x", "wé", "b"], ["hé"], name=node_name,
                         transB=1),
        helper.make_node("Relu", ["hé"], ["yé"], name="relu-é"),
    ]
    graph = helper.make_graph(
        nodes, "named", [helper.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("yé", T.FLOAT, [2, 4])],
        [weight, bias])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


out = sys.argv[1]
with open(os.path.join(out, "utf8.onnx"), "wb") as f:
    f.write(model("gemm-é").SerializeToString())
# Protobuf strings carry their length: swap bytes of the same length.
serialized = model("gemm-XX").SerializeToString()
assert serialized.count(b"gemm-XX") == 1
with open(os.path.join(out, "invalid-utf8.onnx"), "wb") as f:
    f.write(serialized.replace(b"gemm-XX", b"gemm\xc3(X"))

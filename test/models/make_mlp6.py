#!/usr/bin/python3
"""Writes mlp6.onnx: the 6-layer MLP of pp's end-to-end tests.

Two named inputs (x, aux), two outputs (y, aux_out), a skip connection from
the first input to the last layer, Gemm/MatMul/Add/Relu/Tanh/Sigmoid/
Identity/Flatten/Constant nodes, a symbolic batch dimension "batch".
Weights come from a fixed NumPy seed, so the file is reproducible:

    /usr/bin/python3 test/models/make_mlp6.py test/models/mlp6.onnx

--width W makes the hidden layers W wide (default 32, the bundled model);
scripts/bench.sh uses a wide one.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

parser = argparse.ArgumentParser()
parser.add_argument("output", nargs="?", default="mlp6.onnx")
parser.add_argument("--width", type=int, default=32)
args = parser.parse_args()
W = args.width
rng = np.random.default_rng(20261130)


def weight(name, *shape):
    bound = 1.0 / np.sqrt(shape[-1])
    data = rng.uniform(-bound, bound, size=shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


initializers = [
    weight("fc1.weight", W, 16), weight("fc1.bias", W),
    weight("aux.weight", W, 8), weight("aux.bias", W),
    weight("fc2.weight", W, W), weight("fc2.bias", W),
    weight("fc3.weight", W, W),  # used as x @ W, so [in, out]
    weight("fc3.bias", W),
    weight("fc4.weight", W, W), weight("fc4.bias", W),
    weight("skip.weight", W, 16),
    weight("fc5.weight", W, W), weight("fc5.bias", W),
    weight("head.weight", 4, W), weight("head.bias", 4),
    weight("aux_head.weight", 3, W), weight("aux_head.bias", 3),
]

nodes = [
    helper.make_node("Flatten", ["x"], ["x_flat"], name="flatten", axis=1),
    helper.make_node("Gemm", ["x_flat", "fc1.weight", "fc1.bias"], ["h1"],
                     name="fc1", transB=1),
    helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
    helper.make_node("Gemm", ["aux", "aux.weight", "aux.bias"], ["h_aux"],
                     name="aux_fc", transB=1),
    helper.make_node("Add", ["a1", "h_aux"], ["a1_mix"], name="mix"),
    helper.make_node("Gemm", ["a1_mix", "fc2.weight", "fc2.bias"], ["h2"],
                     name="fc2", transB=1, alpha=0.5, beta=2.0),
    helper.make_node("Tanh", ["h2"], ["a2"], name="tanh2"),
    helper.make_node("MatMul", ["a2", "fc3.weight"], ["h3_mm"], name="fc3"),
    helper.make_node("Add", ["h3_mm", "fc3.bias"], ["h3"], name="fc3_bias"),
    helper.make_node("Sigmoid", ["h3"], ["a3"], name="sigmoid3"),
    helper.make_node("Constant", [], ["half"], name="half",
                     value=numpy_helper.from_array(np.array(0.5, np.float32))),
    helper.make_node("Mul", ["a3", "half"], ["a3_half"], name="scale3"),
    helper.make_node("Gemm", ["a3_half", "fc4.weight", "fc4.bias"], ["h4"],
                     name="fc4", transB=1),
    helper.make_node("Relu", ["h4"], ["a4"], name="relu4"),
    helper.make_node("Identity", ["a4"], ["a4_id"], name="identity4"),
    helper.make_node("Gemm", ["x_flat", "skip.weight"], ["skip"],
                     name="skip", transB=1),
    helper.make_node("Sub", ["a4_id", "skip"], ["a4_skip"], name="skip_join"),
    helper.make_node("Gemm", ["a4_skip", "fc5.weight", "fc5.bias"], ["h5"],
                     name="fc5", transB=1),
    helper.make_node("Tanh", ["h5"], ["a5"], name="tanh5"),
    helper.make_node("Gemm", ["a5", "head.weight", "head.bias"], ["y"],
                     name="head", transB=1),
    helper.make_node("Gemm", ["a2", "aux_head.weight", "aux_head.bias"],
                     ["aux_out"], name="aux_head", transB=1),
]

graph = helper.make_graph(
    nodes, "mlp6",
    inputs=[
        helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                      ["batch", 4, 4]),
        helper.make_tensor_value_info("aux", TensorProto.FLOAT,
                                      ["batch", 8]),
    ],
    outputs=[
        helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4]),
        helper.make_tensor_value_info("aux_out", TensorProto.FLOAT,
                                      ["batch", 3]),
    ],
    initializer=initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="pp test/models/make_mlp6.py")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, args.output)

#!/usr/bin/python3
"""Writes attention-split.onnx: Div, Exp, Softmax and Split with parameters.

An attention-like block over the rows of a microbatch, then a gated
residual and a hidden layer Split into two branches that are recombined:

    h      = x W1^T + b1                              (Gemm)
    scores = (h Wq)(h Wk)^T / 4                       (Gemm, Gemm transB, Div)
    attn   = Softmax(scores, axis=-1)                 (Softmax)
    mixed  = attn (h Wv) + h                          (MatMul, Add)
    gated  = mixed / (Exp(mixed Wg) + 1)              (Exp, Add, Div: both
                                                       operands carry gradients)
    p      = gated W2 + b2                            (MatMul, Add)
    p1, p2 = Split(p, [6, 10], axis=1)                (Split, sizes from a
                                                       constant input)
    y      = Tanh(p1) Wa + Relu(p2) Wb + by           (two branches, Add)

Opset 17, a symbolic batch "batch", one input x [batch, 12] and one output
y [batch, 4] (regression target or class logits). Node names (for
--split-points): h, q, k, scores, scale, softmax, v, mix, residual, gate,
gate_exp, gate_den, gated, p, p_bias, split, tanh_a, branch_a, relu_b,
branch_b, join, y. Weights come from a fixed NumPy seed.

Usage: make_attention_split.py DIR
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20260301)


def weight(name, *shape, bound=0.4):
    data = rng.uniform(-bound, bound, size=shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


def constant(name, value, dtype=np.float32):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(
                                np.array(value, dtype), name))


initializers = [
    weight("h.weight", 16, 12), weight("h.bias", 16),
    weight("q.weight", 16, 16), weight("k.weight", 16, 16),
    weight("v.weight", 16, 16), weight("gate.weight", 16, 16),
    weight("p.weight", 16, 16), weight("p.bias", 16),
    weight("a.weight", 6, 4), weight("b.weight", 10, 4),
    weight("y.bias", 4),
    numpy_helper.from_array(np.array([6, 10], np.int64), "split.sizes"),
]

nodes = [
    helper.make_node("Gemm", ["x", "h.weight", "h.bias"], ["h"], name="h",
                     transB=1),
    helper.make_node("Gemm", ["h", "q.weight"], ["q"], name="q"),
    helper.make_node("Gemm", ["h", "k.weight"], ["k"], name="k"),
    helper.make_node("Gemm", ["q", "k"], ["scores"], name="scores",
                     transB=1),
    constant("temperature", 4.0),
    helper.make_node("Div", ["scores", "temperature"], ["scaled"],
                     name="scale"),
    helper.make_node("Softmax", ["scaled"], ["attn"], name="softmax",
                     axis=-1),
    helper.make_node("Gemm", ["h", "v.weight"], ["v"], name="v"),
    helper.make_node("MatMul", ["attn", "v"], ["mixed_v"], name="mix"),
    helper.make_node("Add", ["mixed_v", "h"], ["mixed"], name="residual"),
    helper.make_node("Gemm", ["mixed", "gate.weight"], ["gate"],
                     name="gate"),
    helper.make_node("Exp", ["gate"], ["gate_exp"], name="gate_exp"),
    constant("one", 1.0),
    helper.make_node("Add", ["gate_exp", "one"], ["gate_den"],
                     name="gate_den"),
    helper.make_node("Div", ["mixed", "gate_den"], ["gated"], name="gated"),
    helper.make_node("MatMul", ["gated", "p.weight"], ["p_mm"], name="p"),
    helper.make_node("Add", ["p_mm", "p.bias"], ["p"], name="p_bias"),
    helper.make_node("Split", ["p", "split.sizes"], ["p1", "p2"],
                     name="split", axis=1),
    helper.make_node("Tanh", ["p1"], ["t1"], name="tanh_a"),
    helper.make_node("MatMul", ["t1", "a.weight"], ["ya"], name="branch_a"),
    helper.make_node("Relu", ["p2"], ["r2"], name="relu_b"),
    helper.make_node("MatMul", ["r2", "b.weight"], ["yb"], name="branch_b"),
    helper.make_node("Add", ["ya", "yb"], ["yab"], name="join"),
    helper.make_node("Add", ["yab", "y.bias"], ["y"], name="y"),
]

graph = helper.make_graph(
    nodes, "attention_split",
    inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                          ["batch", 12])],
    outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                           ["batch", 4])],
    initializer=initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="pp test/models/make_attention_split.py")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1] + "/attention-split.onnx")

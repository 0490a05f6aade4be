#!/usr/bin/python3
"""Evaluates what pp's ONNX importer wrote, with NumPy in float64.

Usage: evaluate_nn.py MODULE.mlir EXPECTED.npy NAME=INPUT.npy...

MODULE.mlir is `pp-opt MODEL --mlir-print-op-generic` output: one
func.func @main in the nn dialect whose parameters carry their initial
values (pp.init dense_resource blobs). Evaluates it on the given graph
inputs and checks that its first result agrees with EXPECTED (what the
exporting framework computed) to a relative 1e-5 of its largest magnitude.
This checks the import (folding, shapes, attributes) independently of
pp's kernels.
"""
import math
import re
import sys

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64,
          "i32": np.int32, "i1": np.bool_}


def tensor_type(text):
    match = re.match(r"tensor<((?:\d+x)*)(f32|f64|i64|i32|i1)>", text.strip())
    dims = [int(d) for d in match.group(1).split("x") if d]
    return dims, DTYPES[match.group(2)]


def dense(body, type_text):
    """The value of `dense<body> : type_text`."""
    dims, dtype = tensor_type(type_text)
    if body.startswith('"0x'):  # Raw little-endian bytes.
        values = np.frombuffer(bytes.fromhex(body.strip('"')[2:]), dtype=dtype)
        return np.broadcast_to(values, dims).copy() if values.size == 1 else values.reshape(dims)

    def float_bits(match):  # A float printed as its bit pattern.
        return repr(float(np.array(int(match.group(1), 16), np.uint32).view(np.float32)))
    body = re.sub(r"0x([0-9A-F]{8})", float_bits, body)
    body = body.replace("true", "1").replace("false", "0")
    body = body.replace("inf", "float('inf')").replace("nan", "float('nan')")
    values = np.array(eval(body), dtype=np.float64)
    return np.broadcast_to(values, dims).astype(dtype) if values.ndim == 0 else values.reshape(dims).astype(dtype)


def erf(x):
    return np.vectorize(math.erf)(x)


def softmax_like(x, axis, log):
    z = x - x.max(axis=axis, keepdims=True)
    total = np.exp(z).sum(axis=axis, keepdims=True)
    return z - np.log(total) if log else np.exp(z) / total


def layer_norm(x, axis, epsilon):
    axes = tuple(range(axis % x[0].ndim, x[0].ndim))
    centered = x[0] - x[0].mean(axis=axes, keepdims=True)
    y = centered / np.sqrt((centered ** 2).mean(axis=axes, keepdims=True) + epsilon)
    if len(x) > 1:
        y = y * x[1]
    return y + x[2] if len(x) > 2 else y


def gelu(x, tanh):
    if tanh:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def cast(x, dtype):
    if dtype == np.bool_:
        return x != 0
    if np.issubdtype(dtype, np.integer):
        return np.trunc(x).astype(dtype) if x.dtype.kind == "f" else x.astype(dtype)
    return x.astype(np.float64)


def matmul(x, props):
    a, b = x
    if "transpose_lhs" in props:
        a = np.swapaxes(a, -1, -2)
    if "transpose_rhs" in props:
        b = np.swapaxes(b, -1, -2)
    return a @ b


def evaluate(op, x, props, result_type):
    """One op's results (a list)."""
    def ints(name):
        match = re.search(name + r" = array<i64(?:: ([-\d, ]*))?>", props)
        return [int(v) for v in match.group(1).split(",")] if match and match.group(1) else []

    def integer(name):
        return int(re.search(name + r" = (-?\d+)", props).group(1))

    def real(name):
        return float(re.search(name + r" = ([-\d.eE+]+)", props).group(1))
    ops = {
        "nn.add": lambda: x[0] + x[1],
        "nn.sub": lambda: x[0] - x[1],
        "nn.mul": lambda: x[0] * x[1],
        "nn.div": lambda: x[0] / x[1],
        "nn.pow": lambda: np.power(x[0], x[1]),
        "nn.maximum": lambda: np.maximum(x[0], x[1]),
        "nn.minimum": lambda: np.minimum(x[0], x[1]),
        "nn.sqrt": lambda: np.sqrt(x[0]),
        "nn.rsqrt": lambda: 1 / np.sqrt(x[0]),
        "nn.neg": lambda: -x[0],
        "nn.exp": lambda: np.exp(x[0]),
        "nn.log": lambda: np.log(x[0]),
        "nn.erf": lambda: erf(x[0]),
        "nn.tanh": lambda: np.tanh(x[0]),
        "nn.relu": lambda: np.maximum(x[0], 0),
        "nn.sigmoid": lambda: 1 / (1 + np.exp(-x[0])),
        "nn.gelu": lambda: gelu(x[0], "tanh" in props),
        "nn.cast": lambda: cast(x[0], tensor_type(result_type)[1]),
        "nn.where": lambda: np.where(x[0], x[1], x[2]),
        "nn.matmul": lambda: matmul(x, props),
        "nn.softmax": lambda: softmax_like(x[0], integer("axis"), log=False),
        "nn.log_softmax": lambda: softmax_like(x[0], integer("axis"), log=True),
        "nn.layer_norm": lambda: layer_norm(x, integer("axis"), real("epsilon")),
        "nn.reduce_sum": lambda: np.sum(x[0], axis=tuple(ints("axes")), keepdims="keep_dims" in props),
        "nn.reduce_mean": lambda: np.mean(x[0], axis=tuple(ints("axes")), keepdims="keep_dims" in props),
        "nn.reduce_max": lambda: np.max(x[0], axis=tuple(ints("axes")), keepdims="keep_dims" in props),
        "nn.transpose": lambda: np.transpose(x[0], ints("permutation")),
        "nn.reshape": lambda: x[0].reshape(ints("shape")),
        "nn.broadcast_to": lambda: np.broadcast_to(x[0], ints("shape")).copy(),
        "nn.slice": lambda: x[0][tuple(slice(*b) for b in zip(ints("starts"), ints("limits"), ints("strides")))],
        "nn.concat": lambda: np.concatenate(x, axis=integer("axis")),
        "nn.gather": lambda: np.take(x[0], x[1], axis=integer("axis")),
        "nn.trilu": lambda: (np.triu if "upper" in props else np.tril)(x[0], integer("diagonal")),
        "nn.dropout": lambda: x[0],  # Forward-only: the identity.
    }
    if op == "nn.split":
        return np.split(x[0], np.cumsum(ints("sizes"))[:-1], axis=integer("axis"))
    if op == "arith.constant":
        match = re.search(r"value = dense<(.*)> : (tensor<[^>]*>)", props)
        y = dense(match.group(1), match.group(2))
        return [y.astype(np.float64) if y.dtype.kind == "f" else y]
    if op not in ops:
        sys.exit(f"evaluate_nn.py has no evaluation of {op}")
    return [ops[op]()]


def main():
    text = open(sys.argv[1]).read()
    expected = np.load(sys.argv[2])
    inputs = dict((k, np.load(v)) for k, v in (a.split("=", 1) for a in sys.argv[3:]))
    blobs = dict(re.findall(r'"?([^"\s]+)"?: "0x([0-9A-Fa-f]+)"', text.split("dialect_resources")[-1]))
    values = {}
    signature = re.search(r"\^bb0\((.*?)\):", text).group(1)
    names = re.findall(r'pp.name = "([^"]*)"', re.search(r"arg_attrs = \[(.*?)\], function_type", text).group(1))
    for (arg, type_text), name in zip(re.findall(r"(%arg\d+): (tensor<[^>]*>)", signature), names):
        if name in inputs:
            values[arg] = inputs[name]
        else:  # A parameter: its initial value (the blob starts with its alignment).
            dims, dtype = tensor_type(type_text)
            values[arg] = np.frombuffer(bytes.fromhex(blobs[name])[4:], dtype=dtype).reshape(dims).astype(np.float64)
    op_line = re.compile(r'\s*(%\w+)(?::\d+)? = "([\w.]+)"\((.*?)\)\s*(?:<\{(.*?)\}>)?\s*(?:\{pp.node[^}]*\})?\s*: \(.*?\) -> (.*)$')
    for line in text.split("\n"):
        returned = re.match(r'\s*"func.return"\((.*?)\)', line)
        if returned:
            result = values[returned.group(1).split(",")[0].strip()]
            break
        match = op_line.match(line)
        if not match:
            continue
        name, op, operands, props, result_type = match.groups()
        x = [values[o.strip()] for o in operands.split(",") if o.strip()]
        results = evaluate(op, x, props or "", result_type)
        if len(results) == 1:
            values[name] = results[0]
        for i, value in enumerate(results):
            values[f"{name}#{i}"] = value
    error = float(np.abs(result - expected).max() / np.abs(expected).max())
    agrees = result.shape == expected.shape and error <= 1e-5
    print(f"{sys.argv[1]}: relative error {error:.3g} {'agrees' if agrees else 'DIFFERS'}")
    sys.exit(0 if agrees else 1)


main()

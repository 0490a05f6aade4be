#!/usr/bin/python3
"""An independent float64 reference for pp-run's first-step loss.

Usage: onnx_reference.py MODEL LOSS_KIND OUTPUT MICROBATCH_SIZE
                         MICROBATCHES SEED [METRICS]

MODEL is a binary .onnx file or a model in ONNX's text syntax (.onnxtxt).

Evaluates the ONNX model with NumPy in float64 (its own implementation of
the supported ops, not pp's), on the synthetic data pp-run draws for step 1
(runtime/data/SyntheticData.cpp: SplitMix64 of seed, tensor name, global sample
index and element index; ids of an input that indexes a table below its
rows; sequence labels padded with ignore_index -100), and prints the
step's token-weighted loss: the sum over the step's valid tokens divided by
their count over all microbatches. With
METRICS (a pp-run metrics file) it also checks that pp-run's step-1 loss
agrees to a relative 1e-5 (pp computes in float32).
"""
import json
import sys

import numpy as np
import onnx
import onnx.parser
from onnx import numpy_helper

MASK = (1 << 64) - 1


def mix64(value):
    value = (value + 0x9E3779B97F4A7C15) & MASK
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & MASK
    return value ^ (value >> 31)


def synthetic(seed, name, shape, first_sample, classes=0):
    base = mix64(seed)
    for byte in name.encode():
        base = mix64(base ^ byte)
    count = int(np.prod(shape))
    per_sample = count // shape[0]
    values = []
    for i in range(count):
        sample, element = first_sample + i // per_sample, i % per_sample
        bits = mix64(base ^ mix64(sample * 2 + 1) ^ mix64(element * 2))
        if classes:
            values.append(bits % classes)
        else:
            values.append(2.0 * float(np.float32((bits >> 40) / 16777216.0)) - 1.0)
    return np.array(values, dtype=np.int64 if classes else np.float64).reshape(shape)


def pad_labels(labels, first_sample, ignore_index=-100):
    """Pads sequence labels as pp-run's synthetic data does
    (SyntheticData.h, fillSyntheticLabels): sample g keeps its first
    L - g % (L + 1) positions."""
    if labels.ndim < 2:
        return labels
    flat = labels.reshape(labels.shape[0], -1).copy()
    per_sample = flat.shape[1]
    for s in range(flat.shape[0]):
        padding = (first_sample + s) % (per_sample + 1)
        flat[s, per_sample - padding:] = ignore_index
    return flat.reshape(labels.shape)


def index_bounds(model):
    """The rows below which each integer input's ids must stay: the
    smallest axis size of a Gather of an initializer that it indexes."""
    shapes = {i.name: list(i.dims) for i in model.graph.initializer}
    bounds = {}
    for node in model.graph.node:
        if node.op_type == "Gather" and node.input[0] in shapes:
            size = shapes[node.input[0]][attribute(node, "axis", 0)]
            bounds[node.input[1]] = min(bounds.get(node.input[1], size), size)
    return bounds


def attribute(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def gemm(node, x):
    a = x[0].T if attribute(node, "transA", 0) else x[0]
    b = x[1].T if attribute(node, "transB", 0) else x[1]
    y = attribute(node, "alpha", 1.0) * (a @ b)
    if len(x) > 2:
        y = y + attribute(node, "beta", 1.0) * x[2]
    return y


def flatten(node, x):
    axis = attribute(node, "axis", 1)
    return x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)


def softmax(node, x):
    axis = attribute(node, "axis", -1)
    z = np.exp(x[0] - x[0].max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def cast(node, x):
    to = attribute(node, "to", None)
    if to == onnx.TensorProto.BOOL:
        return x[0] != 0
    if to in (onnx.TensorProto.INT32, onnx.TensorProto.INT64):
        return np.trunc(x[0]).astype(np.int64)
    return x[0].astype(np.float64)


def gather(node, x):
    # np.take counts negative indices from the end, as ONNX does.
    return np.take(x[0], x[1].astype(np.int64), axis=attribute(node, "axis", 0))


def split(node, x):
    axis = attribute(node, "axis", 0)
    if len(x) > 1:
        sizes = x[1].astype(np.int64)
    else:
        sizes = [x[0].shape[axis] // len(node.output)] * len(node.output)
    return np.split(x[0], np.cumsum(sizes)[:-1], axis=axis)


# Each op's evaluation: (node, input values) -> its output, or a list of
# outputs for ops with several.
OPS = {
    "Add": lambda node, x: x[0] + x[1],
    "Cast": cast,
    "Constant": lambda node, x: numpy_helper.to_array(
        attribute(node, "value", None)).astype(np.float64),
    "Div": lambda node, x: x[0] / x[1],
    "Exp": lambda node, x: np.exp(x[0]),
    "Flatten": flatten,
    "Gather": gather,
    "Gemm": gemm,
    "Identity": lambda node, x: x[0],
    "MatMul": lambda node, x: x[0] @ x[1],
    "Mul": lambda node, x: x[0] * x[1],
    "Relu": lambda node, x: np.maximum(x[0], 0),
    "Sigmoid": lambda node, x: 1 / (1 + np.exp(-x[0])),
    "Softmax": softmax,
    "Split": split,
    "Sub": lambda node, x: x[0] - x[1],
    "Tanh": lambda node, x: np.tanh(x[0]),
    "Where": lambda node, x: np.where(x[0], x[1], x[2]),
}


def run(model, inputs):
    values = dict(inputs)
    for init in model.graph.initializer:
        values[init.name] = numpy_helper.to_array(init).astype(np.float64)
    for node in model.graph.node:
        if node.op_type not in OPS:
            sys.exit(f"no reference for {node.op_type}")
        y = OPS[node.op_type](node, [values[name] for name in node.input if name])
        outputs = y if isinstance(y, list) else [y]
        values.update((name, value) for name, value in zip(node.output, outputs) if name)
    return values


def main():
    path, kind, output, batch, microbatches, seed = sys.argv[1:7]
    batch, microbatches, seed = int(batch), int(microbatches), int(seed)
    if path.endswith(".onnxtxt"):
        with open(path) as f:
            model = onnx.parser.parse_model(f.read())
    else:
        model = onnx.load(path)
    initializers = {i.name for i in model.graph.initializer}
    bounds = index_bounds(model)
    total, count = 0.0, 0
    for k in range(microbatches):
        first = k * batch
        inputs = {}
        for info in model.graph.input:
            if info.name in initializers:
                continue
            shape = [d.dim_value or batch for d in info.type.tensor_type.shape.dim]
            inputs[info.name] = synthetic(seed, info.name, shape, first,
                                          bounds.get(info.name, 0))
        y = run(model, inputs)[output]
        if kind == "mse":
            labels = synthetic(seed, "labels", list(y.shape), first)
            total += float(np.sum((y - labels) ** 2))
            count += labels.size
        else:
            labels = pad_labels(synthetic(seed, "labels", list(y.shape[:-1]),
                                          first, y.shape[-1]), first)
            z = y.reshape(-1, y.shape[-1])
            z = z - z.max(axis=1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
            valid = labels.reshape(-1) != -100
            total += float(-logp[np.arange(len(z))[valid],
                                 labels.reshape(-1)[valid]].sum())
            count += int(valid.sum())
    reference = total / count
    print(f"reference {reference:.10g}")
    if len(sys.argv) > 7:
        with open(sys.argv[7]) as f:
            measured = json.loads(f.readline())["loss"]
        agrees = abs(measured - reference) <= 1e-5 * abs(reference)
        print(f"pp-run {measured:.10g} {'agrees' if agrees else 'DIFFERS'}")
        sys.exit(0 if agrees else 1)


if __name__ == "__main__":
    main()

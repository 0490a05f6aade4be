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

       onnx_reference.py --check MODEL EXPECTED.npy NAME=INPUT.npy...

checks the reference itself: evaluates MODEL on the given inputs and
compares its first output with EXPECTED (what the exporting framework
computed) to a relative 1e-5 of its largest magnitude.
"""
import functools
import json
import math
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


def as_reference(array):
    """Floats in float64, integers and bools as they are."""
    return array.astype(np.float64) if array.dtype.kind == "f" else array


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


def log_softmax(node, x):
    axis = attribute(node, "axis", -1)
    z = x[0] - x[0].max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def cast(node, x):
    to = attribute(node, "to", None)
    if to == onnx.TensorProto.BOOL:
        return x[0] != 0
    if to in (onnx.TensorProto.INT32, onnx.TensorProto.INT64):
        return np.trunc(x[0]).astype(np.int64)
    return x[0].astype(np.float64)


def constant(node, x):
    for name in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        value = attribute(node, name, None)
        if value is not None:
            if name == "value":
                return as_reference(numpy_helper.to_array(value))
            return np.array(value, dtype=np.float64 if "float" in name else np.int64)
    sys.exit(f"Constant {node.name} has no value")


def constant_of_shape(node, x):
    value = attribute(node, "value", None)
    fill = as_reference(numpy_helper.to_array(value)).reshape(-1) if value is not None else np.zeros(1)
    return np.full(tuple(x[0]), fill[0], dtype=fill.dtype)


def gather(node, x):
    # np.take counts negative indices from the end, as ONNX does.
    return np.take(x[0], x[1].astype(np.int64), axis=attribute(node, "axis", 0))


def split(node, x):
    axis = attribute(node, "axis", 0)
    count = len(node.output)
    if len(x) > 1:
        sizes = x[1].astype(np.int64)
    elif attribute(node, "num_outputs", None):
        part = -(-x[0].shape[axis] // count)
        sizes = [part] * (count - 1) + [x[0].shape[axis] - part * (count - 1)]
    else:
        sizes = [x[0].shape[axis] // count] * count
    return np.split(x[0], np.cumsum(sizes)[:-1], axis=axis)


def reduce(function):
    def evaluate(node, x):
        axes = x[1] if len(x) > 1 else attribute(node, "axes", None)
        if axes is None or len(axes) == 0:
            if attribute(node, "noop_with_empty_axes", 0):
                return x[0]
            axes = range(x[0].ndim)
        keepdims = bool(attribute(node, "keepdims", 1))
        return function(x[0], axis=tuple(int(a) for a in axes), keepdims=keepdims)
    return evaluate


def layer_normalization(node, x):
    axis = attribute(node, "axis", -1) % x[0].ndim
    axes = tuple(range(axis, x[0].ndim))
    centered = x[0] - x[0].mean(axis=axes, keepdims=True)
    variance = (centered ** 2).mean(axis=axes, keepdims=True)
    y = centered / np.sqrt(variance + attribute(node, "epsilon", 1e-5)) * x[1]
    return y + x[2] if len(x) > 2 else y


def gelu(node, x):
    if attribute(node, "approximate", b"none") in (b"tanh", "tanh"):
        return 0.5 * x[0] * (1 + np.tanh(np.sqrt(2 / np.pi) * (x[0] + 0.044715 * x[0] ** 3)))
    return 0.5 * x[0] * (1 + erf(x[0] / np.sqrt(2)))


def erf(values):
    return np.vectorize(math.erf)(values)


def reshape(node, x):
    shape = [int(s) for s in x[1]]
    if not attribute(node, "allowzero", 0):
        shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x[0].reshape(shape)


def unsqueeze(node, x):
    rank = x[0].ndim + len(x[1])
    y = x[0]
    for axis in sorted(int(a) % rank for a in x[1]):
        y = np.expand_dims(y, axis)
    return y


def squeeze(node, x):
    if len(x) > 1:
        return np.squeeze(x[0], axis=tuple(int(a) for a in x[1]))
    return np.squeeze(x[0])


def slice_(node, x):
    data = x[0]
    axes = x[3] if len(x) > 3 and x[3] is not None else range(len(x[1]))
    steps = x[4] if len(x) > 4 else [1] * len(x[1])
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(x[1], x[2], axes, steps):
        # Python's slices clamp as ONNX does; INT64_MAX ends become None.
        index[int(axis)] = slice(int(start), int(min(end, 2**62)), int(step))
    return data[tuple(index)]


def shape(node, x):
    return np.array(x[0].shape[attribute(node, "start", 0):attribute(node, "end", None)], dtype=np.int64)


# Whether the evaluation is a training step (--check evaluates forward
# passes, where Dropout is the identity as in evaluation).
TRAINING = True


def dropout(node, x):
    if TRAINING and len(x) > 2 and bool(x[2]):
        sys.exit(f"Dropout {node.name} drops in training mode: no deterministic reference")
    return x[0]


def trilu(node, x):
    k = int(x[1]) if len(x) > 1 else 0
    return np.triu(x[0], k) if attribute(node, "upper", 1) else np.tril(x[0], k)


def variadic(function):
    return lambda node, x: functools.reduce(function, x)


def divide(a, b):
    if a.dtype.kind in "iu":
        return np.trunc(a / b).astype(a.dtype)  # ONNX runtimes truncate.
    return a / b


# Each op's evaluation: (node, input values) -> its output, or a list of
# outputs for ops with several.
OPS = {
    "Add": lambda node, x: x[0] + x[1],
    "Cast": cast,
    "Concat": lambda node, x: np.concatenate(x, axis=attribute(node, "axis", 0)),
    "Constant": constant,
    "ConstantOfShape": constant_of_shape,
    "Div": lambda node, x: divide(x[0], x[1]),
    "Dropout": dropout,
    "Equal": lambda node, x: x[0] == x[1],
    "Erf": lambda node, x: erf(x[0]),
    "Exp": lambda node, x: np.exp(x[0]),
    "Expand": lambda node, x: x[0] * np.ones(tuple(x[1]), dtype=x[0].dtype),
    "Flatten": flatten,
    "Gather": gather,
    "Gelu": gelu,
    "Gemm": gemm,
    "Identity": lambda node, x: x[0],
    "LayerNormalization": layer_normalization,
    "Log": lambda node, x: np.log(x[0]),
    "LogSoftmax": log_softmax,
    "MatMul": lambda node, x: x[0] @ x[1],
    "Max": variadic(np.maximum),
    "Min": variadic(np.minimum),
    "Mul": lambda node, x: x[0] * x[1],
    "Neg": lambda node, x: -x[0],
    "Pow": lambda node, x: np.power(x[0], x[1].astype(x[0].dtype)),
    "Range": lambda node, x: np.arange(x[0], x[1], x[2]),
    "Reciprocal": lambda node, x: 1 / x[0],
    "ReduceMax": reduce(np.max),
    "ReduceMean": reduce(np.mean),
    "ReduceSum": reduce(np.sum),
    "Relu": lambda node, x: np.maximum(x[0], 0),
    "Reshape": reshape,
    "Shape": shape,
    "Sigmoid": lambda node, x: 1 / (1 + np.exp(-x[0])),
    "Slice": slice_,
    "Softmax": softmax,
    "Split": split,
    "Sqrt": lambda node, x: np.sqrt(x[0]),
    "Squeeze": squeeze,
    "Sub": lambda node, x: x[0] - x[1],
    "Tanh": lambda node, x: np.tanh(x[0]),
    "Transpose": lambda node, x: np.transpose(x[0], attribute(node, "perm", None)),
    "Trilu": trilu,
    "Unsqueeze": unsqueeze,
    "Where": lambda node, x: np.where(x[0], x[1], x[2]),
}


def run(model, inputs):
    values = dict(inputs)
    for init in model.graph.initializer:
        values[init.name] = as_reference(numpy_helper.to_array(init))
    for node in model.graph.node:
        if node.op_type not in OPS:
            sys.exit(f"no reference for {node.op_type}")
        # An optional input left out in the middle is None.
        x = [values[name] if name else None for name in node.input]
        while x and x[-1] is None:
            x.pop()
        y = OPS[node.op_type](node, x)
        outputs = y if isinstance(y, list) else [y]
        values.update((name, value) for name, value in zip(node.output, outputs) if name)
    return values


def load(path):
    if path.endswith(".onnxtxt"):
        with open(path) as f:
            return onnx.parser.parse_model(f.read())
    return onnx.load(path)


def check(path, expected_path, inputs):
    global TRAINING
    TRAINING = False
    model = load(path)
    inputs = dict((k, as_reference(np.load(v))) for k, v in (a.split("=", 1) for a in inputs))
    result = run(model, inputs)[model.graph.output[0].name]
    expected = np.load(expected_path)
    error = float(np.abs(result - expected).max() / np.abs(expected).max())
    agrees = result.shape == expected.shape and error <= 1e-5
    print(f"reference of {path}: relative error {error:.3g} {'agrees' if agrees else 'DIFFERS'}")
    sys.exit(0 if agrees else 1)


def main():
    if sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3], sys.argv[4:])
    path, kind, output, batch, microbatches, seed = sys.argv[1:7]
    batch, microbatches, seed = int(batch), int(microbatches), int(seed)
    model = load(path)
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

#!/usr/bin/python3
"""Input files for `pp-run --infer` and a check of its outputs against
onnx_reference.py's float64 NumPy evaluation of the ONNX model.

Usage: infer_reference.py inputs MODEL BATCH DIR
           writes DIR/input_0.pb, ... (one TensorProto per model input, in
           the model's order; symbolic dimensions become BATCH; floats
           uniform in [-1, 1), integers in [0, 4))
       infer_reference.py check MODEL INPUT_DIR OUTPUT_DIR
           evaluates the model on the input files and compares every
           output_i.pb (name, shape, dtype, values within a relative 1e-5
           of the largest reference value) with output i of the model
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_reference import run  # noqa: E402


def model_inputs(model):
    initializers = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def write_inputs(model, batch, directory):
    rng = np.random.default_rng(5)
    for index, info in enumerate(model_inputs(model)):
        tensor_type = info.type.tensor_type
        shape = [d.dim_value or batch for d in tensor_type.shape.dim]
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor_type.elem_type]
        if np.issubdtype(dtype, np.floating):
            value = rng.uniform(-1, 1, size=shape).astype(dtype)
        else:
            value = rng.integers(0, 4, size=shape).astype(dtype)
        path = os.path.join(directory, f"input_{index}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(value, info.name).SerializeToString())
        print(f"{path}: {info.name} {list(value.shape)} {value.dtype}")


def read(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor.name, numpy_helper.to_array(tensor)


def check(model, input_dir, output_dir):
    inputs = {}
    for index, info in enumerate(model_inputs(model)):
        _, value = read(os.path.join(input_dir, f"input_{index}.pb"))
        inputs[info.name] = value.astype(np.float64) \
            if np.issubdtype(value.dtype, np.floating) else value
    values = run(model, inputs)
    ok = True
    for index, info in enumerate(model.graph.output):
        name, measured = read(os.path.join(output_dir, f"output_{index}.pb"))
        reference = values[info.name]
        scale = max(1.0, float(np.max(np.abs(reference))))
        error = float(np.max(np.abs(measured - reference))) / scale
        agrees = (name == info.name and measured.shape == reference.shape
                  and error <= 1e-5)
        ok = ok and agrees
        print(f"output_{index} {name} {list(measured.shape)} {measured.dtype} "
              f"error {error:.2e} {'agrees' if agrees else 'DIFFERS'}")
    sys.exit(0 if ok else 1)


def main():
    command, path = sys.argv[1:3]
    model = onnx.load(path)
    if command == "inputs":
        write_inputs(model, int(sys.argv[3]), sys.argv[4])
    else:
        check(model, sys.argv[3], sys.argv[4])


main()

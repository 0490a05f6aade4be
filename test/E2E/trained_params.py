#!/usr/bin/python3
"""Says which parameters training changed.

Usage: trained_params.py MODEL PARAMS

Prints, for every tensor of PARAMS (a pp-run --save-params file, laid out as
runtime/ParameterFile.h says), "NAME changed" or "NAME unchanged" against
the initializer of that name in MODEL (.onnx, or .onnxtxt in ONNX's text
syntax).
"""
import struct
import sys

import numpy as np
import onnx
import onnx.parser
from onnx import numpy_helper


def load(path):
    if path.endswith(".onnxtxt"):
        with open(path) as f:
            return onnx.parser.parse_model(f.read())
    return onnx.load(path)


def saved(path):
    """Yields (name, values) for each tensor of a pp parameter file."""
    with open(path, "rb") as f:
        data = f.read()
    at = data.index(b"\n") + 1
    while at < len(data):
        (length,) = struct.unpack_from("<I", data, at)
        name = data[at + 4:at + 4 + length].decode()
        (rank,) = struct.unpack_from("<I", data, at + 4 + length)
        at += 8 + length
        shape = struct.unpack_from(f"<{rank}q", data, at)
        at += 8 * rank
        values = np.frombuffer(data, "<f4", int(np.prod(shape)), at)
        at += 4 * values.size
        yield name, values.reshape(shape)


if __name__ == "__main__":
    initial = {i.name: numpy_helper.to_array(i)
               for i in load(sys.argv[1]).graph.initializer}
    for name, values in saved(sys.argv[2]):
        same = np.array_equal(values, initial[name].astype(np.float32))
        print(f"{name} {'unchanged' if same else 'changed'}")

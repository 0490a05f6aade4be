#!/usr/bin/python3
"""Compares two ONNX TensorProto files (.pb): same shape and dtype, and
every element within TOLERANCE of the expected one relative to the
expected tensor's largest magnitude (at least 1). Exits 1 saying where they
differ most.

    compare_tensor_files.py ACTUAL.pb EXPECTED.pb [TOLERANCE=1e-5]
"""
import sys

import numpy as np
from onnx import TensorProto, numpy_helper


def read(path):
    tensor = TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


actual, expected = read(sys.argv[1]), read(sys.argv[2])
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
if actual.shape != expected.shape or actual.dtype != expected.dtype:
    sys.exit(f"{sys.argv[1]}: {actual.dtype}{list(actual.shape)}, expected "
             f"{expected.dtype}{list(expected.shape)}")
scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
if error.size and error.max() > tolerance * scale:
    worst = np.unravel_index(np.argmax(error), error.shape)
    sys.exit(f"{sys.argv[1]}: element {list(worst)} is {actual[worst]}, "
             f"expected {expected[worst]} (error {error.max():.3g} > "
             f"{tolerance} * {scale:.3g})")
print(f"{sys.argv[1]}: within {tolerance} (max error {error.max():.3g})")

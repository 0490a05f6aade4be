"""Reads and writes the parameter files of pp-run --save-params and
--save-grads (runtime/checkpoints/ParameterFile.h).

The line "pp-parameters 1", then per parameter in name order a 32-bit name
length, the name, a 32-bit rank, 64-bit dimensions and the f32 values, all
little-endian.
"""
import hashlib
import struct
import sys

import numpy as np


def read_parameters(path):
    """The parameters in `path`, by name, as float32 arrays of their shape."""
    with open(path, "rb") as f:
        data = f.read()
    header = b"pp-parameters 1\n"
    if not data.startswith(header):
        sys.exit(f"{path}: not a pp parameter file")
    at, result = len(header), {}
    while at < len(data):
        (length,) = struct.unpack_from("<I", data, at)
        name = data[at + 4:at + 4 + length].decode()
        at += 4 + length
        (rank,) = struct.unpack_from("<I", data, at)
        shape = struct.unpack_from(f"<{rank}q", data, at + 4)
        at += 4 + 8 * rank
        count = int(np.prod(shape))
        result[name] = np.frombuffer(data, "<f4", count, at).reshape(shape)
        at += 4 * count
    return result


def params_sha256(parameters):
    """pp-run's params_sha256 of `parameters`: SHA-256 over each in name
    order of the name, a NUL byte and the raw little-endian f32 values."""
    digest = hashlib.sha256()
    for name in sorted(parameters):
        digest.update(name.encode() + b"\0")
        digest.update(parameters[name].astype("<f4").tobytes())
    return digest.hexdigest()


def write_parameters(path, parameters):
    """Writes `parameters` (name -> array) as read_parameters reads them."""
    with open(path, "wb") as f:
        f.write(b"pp-parameters 1\n")
        for name in sorted(parameters):
            value = np.ascontiguousarray(parameters[name], dtype="<f4")
            encoded = name.encode()
            f.write(struct.pack("<I", len(encoded)) + encoded)
            f.write(struct.pack("<I", value.ndim))
            f.write(struct.pack(f"<{value.ndim}q", *value.shape))
            f.write(value.tobytes())

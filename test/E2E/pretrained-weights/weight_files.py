#!/usr/bin/python3
"""Writes the safetensors files of pretrained-weights.test from a good one,
without torch: the format is 8 bytes of header length, a JSON header and
the data (runtime/checkpoints/SafeTensors.h).

    weight_files.py GOOD.safetensors OUT_DIR

OUT_DIR gets: missing.safetensors (one tensor dropped), extra.safetensors
(one more tensor), misshapen.safetensors (one tensor transposed),
int64.safetensors (one tensor as I64), truncated.safetensors (cut inside
the data), corrupt.safetensors (the header's JSON broken),
prefixless.safetensors (the names without "model."), truncated-header.safetensors (cut inside
the header), and
lost-shard/model.safetensors.index.json naming a shard that is not there.
"""

import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "I64": np.int64}


def read(path):
    data = open(path, "rb").read()
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    body = data[8 + length:]
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(body[begin:end], DTYPES[entry["dtype"]]
                                      ).reshape(entry["shape"])
    return tensors


def write(path, tensors):
    header, body, offset = {"__metadata__": {"format": "pt"}}, b"", 0
    for name, value in tensors.items():
        raw = np.ascontiguousarray(value).tobytes()
        dtype = {np.dtype(v): k for k, v in DTYPES.items()}[value.dtype]
        header[name] = {"dtype": dtype, "shape": list(value.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        body += raw
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def main():
    good, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "lost-shard"), exist_ok=True)
    tensors = read(good)
    names = sorted(tensors)
    variant = lambda **change: {**tensors, **change}
    write(os.path.join(out, "missing.safetensors"),
          {n: v for n, v in tensors.items() if n != names[-1]})
    write(os.path.join(out, "extra.safetensors"),
          variant(**{"model.extra.weight": np.zeros(3, np.float32)}))
    write(os.path.join(out, "misshapen.safetensors"),
          variant(**{names[1]: tensors[names[1]].T.copy()}))
    write(os.path.join(out, "int64.safetensors"),
          variant(**{names[1]: tensors[names[1]].astype(np.int64)}))
    write(os.path.join(out, "prefixless.safetensors"),
          {n[len("model."):] if n.startswith("model.") else n: v
           for n, v in tensors.items()})
    whole = open(good, "rb").read()
    open(os.path.join(out, "truncated.safetensors"), "wb").write(
        whole[:len(whole) // 2])
    length = struct.unpack("<Q", whole[:8])[0]
    open(os.path.join(out, "truncated-header.safetensors"), "wb").write(
        whole[:8 + length // 2])
    open(os.path.join(out, "corrupt.safetensors"), "wb").write(
        whole[:8] + b"{" + whole[9:8 + length].replace(b":", b";", 1) +
        whole[8 + length:])
    write(os.path.join(out, "lost-shard", "model-00001-of-00002.safetensors"),
          {n: tensors[n] for n in names[:10]})
    json.dump({"metadata": {}, "weight_map": {
        n: "model-0000%d-of-00002.safetensors" % (1 if i < 10 else 2)
        for i, n in enumerate(names)}},
        open(os.path.join(out, "lost-shard",
                          "model.safetensors.index.json"), "w"))
    print("wrote the variants of %d tensors" % len(tensors))


if __name__ == "__main__":
    main()

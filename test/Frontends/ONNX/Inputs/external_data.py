#!/usr/bin/python3
"""Writes ONNX models that keep their weights in external data files.

Usage: external_data.py MODEL.onnx DIR

DIR/model/mlp.onnx is MODEL with every initializer in DIR/model/mlp.onnx.data
(as onnx.save_model(..., save_as_external_data=True) writes large models,
with an SHA-1 checksum on one tensor). Each DIR/model/bad-*.onnx points one
initializer somewhere pp must refuse: an absolute path, a '..' escape, a
symlink out of the folder, a FIFO, a missing file, a file shorter than
offset + length, a wrong checksum, a length its shape does not take, and a
key ONNX does not have.
"""
import hashlib
import os
import sys

import onnx

model_path, out = sys.argv[1:]
folder = os.path.join(out, "model")
os.makedirs(folder)
model = onnx.load(model_path)
onnx.save_model(model, os.path.join(folder, "mlp.onnx"),
                save_as_external_data=True, all_tensors_to_one_file=True,
                location="mlp.onnx.data", size_threshold=0)
data = os.path.join(folder, "mlp.onnx.data")
with open(data, "rb") as file:
    sha1 = hashlib.sha1(file.read()).hexdigest()

# A second copy of the data outside the folder, and ways to reach it.
outside = os.path.join(out, "outside.data")
with open(data, "rb") as source, open(outside, "wb") as target:
    target.write(source.read())
os.symlink(outside, os.path.join(folder, "link.data"))
os.mkfifo(os.path.join(folder, "fifo.data"))
with open(data, "rb") as source, open(os.path.join(folder, "short.data"),
                                      "wb") as target:
    target.write(source.read()[:100])


def variant(name, **keys):
    """mlp.onnx with fc2.weight's external data keys changed by `keys`
    (None removes a key)."""
    bad = onnx.load(os.path.join(folder, "mlp.onnx"), load_external_data=False)
    tensor = next(t for t in bad.graph.initializer if t.name == "fc2.weight")
    entries = {e.key: e.value for e in tensor.external_data}
    entries.update(keys)
    del tensor.external_data[:]
    for key, value in entries.items():
        if value is not None:
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    onnx.save_model(bad, os.path.join(folder, name + ".onnx"))


variant("checksummed", checksum=sha1)
variant("bad-absolute", location=os.path.abspath(outside))
variant("bad-escape", location="../outside.data")
variant("bad-symlink", location="link.data")
variant("bad-fifo", location="fifo.data")
variant("bad-missing", location="missing.data")
variant("bad-short", location="short.data")
variant("bad-checksum", checksum="0" * 40)
variant("bad-length", length="12")
variant("bad-key", basepath="/tmp")

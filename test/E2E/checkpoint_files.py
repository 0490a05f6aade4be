#!/usr/bin/python3
"""Reads and edits pp checkpoints (docs/checkpoints.md) for the tests.

Usage:
  checkpoint_files.py summary STEP_DIR
      prints each safetensors file's metadata format and first names, and
      state.json's version, step, cursor, global batch and saved mesh;
  checkpoint_files.py set-shape FILE NAME DIM,DIM...
      rewrites tensor NAME's shape in FILE's header (the data unchanged);
  checkpoint_files.py flip-byte FILE NAME BYTE
      inverts the bits of byte BYTE of tensor NAME's data;
  checkpoint_files.py swap-offsets FILE NAME NAME
      exchanges the data_offsets of two tensors of the same size;
  checkpoint_files.py set-value FILE NAME ELEMENT VALUE
      writes the f32 VALUE (nan, inf, -0.5, ...) at element ELEMENT of NAME;
  checkpoint_files.py set-metadata FILE KEY VALUE
      sets FILE's __metadata__ KEY to the string VALUE;
  checkpoint_files.py drop-metadata FILE KEY
      removes KEY from FILE's __metadata__;
  checkpoint_files.py downgrade STEP_DIR
      makes STEP_DIR's state.json format version 1 (no "files" digests), as
      pp wrote it before the digests;
  checkpoint_files.py rehash STEP_DIR
      records the digests of STEP_DIR's files as they are now in its
      state.json (docs/checkpoints.md), so that only the value checks see
      an edit.
"""
import hashlib
import json
import struct
import sys

FILES = ("parameters.safetensors", "optimizer.safetensors")


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    length = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + length]), data[8 + length:]


def write(path, header, data):
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def edit_data(path, name, offset, replacement):
    """Replaces bytes of tensor NAME's data from OFFSET with REPLACEMENT."""
    header, data = read(path)
    begin = header[name]["data_offsets"][0] + offset
    data = data[:begin] + replacement + data[begin + len(replacement):]
    write(path, header, data)


def record(path):
    """What state.json's "files" records of the file at PATH."""
    header, data = read(path)
    metadata = hashlib.sha256()
    for key, value in sorted(header.get("__metadata__", {}).items()):
        metadata.update(key.encode() + b"\0" + value.encode() + b"\0")
    tensors = {}
    for name, entry in header.items():
        if name != "__metadata__":
            begin, end = entry["data_offsets"]
            tensors[name] = hashlib.sha256(data[begin:end]).hexdigest()
    return {"metadata_sha256": metadata.hexdigest(), "tensors": tensors}


def main():
    if sys.argv[1] == "summary":
        directory = sys.argv[2]
        for name in ("parameters", "optimizer"):
            header, _ = read(f"{directory}/{name}.safetensors")
            print(name, header["__metadata__"]["format"], sorted(header)[:3])
        with open(f"{directory}/state.json") as f:
            state = json.load(f)
        print(state["format_version"], state["step"],
              state["consumed_samples"], state["global_batch"],
              state["saved_from"]["mesh"])
    elif sys.argv[1] == "set-shape":
        path, name, dims = sys.argv[2:5]
        header, data = read(path)
        header[name]["shape"] = [int(d) for d in dims.split(",")]
        write(path, header, data)
    elif sys.argv[1] == "flip-byte":
        path, name, byte = sys.argv[2:5]
        header, data = read(path)
        at = header[name]["data_offsets"][0] + int(byte)
        edit_data(path, name, int(byte), bytes([data[at] ^ 0xFF]))
    elif sys.argv[1] == "swap-offsets":
        path, first, second = sys.argv[2:5]
        header, data = read(path)
        a, b = header[first], header[second]
        assert a["data_offsets"][1] - a["data_offsets"][0] == \
            b["data_offsets"][1] - b["data_offsets"][0], "sizes differ"
        a["data_offsets"], b["data_offsets"] = \
            b["data_offsets"], a["data_offsets"]
        write(path, header, data)
    elif sys.argv[1] == "set-value":
        path, name, element, value = sys.argv[2:6]
        edit_data(path, name, 4 * int(element),
                  struct.pack("<f", float(value)))
    elif sys.argv[1] == "set-metadata":
        path, key, value = sys.argv[2:5]
        header, data = read(path)
        header["__metadata__"][key] = value
        write(path, header, data)
    elif sys.argv[1] == "drop-metadata":
        path, key = sys.argv[2:4]
        header, data = read(path)
        del header["__metadata__"][key]
        write(path, header, data)
    elif sys.argv[1] == "downgrade":
        directory = sys.argv[2]
        with open(f"{directory}/state.json") as f:
            state = json.load(f)
        state["format_version"] = 1
        del state["files"]
        with open(f"{directory}/state.json", "w") as f:
            json.dump(state, f, indent=2)
    elif sys.argv[1] == "rehash":
        directory = sys.argv[2]
        with open(f"{directory}/state.json") as f:
            state = json.load(f)
        state["files"] = {name: record(f"{directory}/{name}")
                          for name in FILES}
        with open(f"{directory}/state.json", "w") as f:
            json.dump(state, f, indent=2)
    else:
        sys.exit(f"unknown command '{sys.argv[1]}'")


if __name__ == "__main__":
    main()

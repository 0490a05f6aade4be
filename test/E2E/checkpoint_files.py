#!/usr/bin/python3
"""Reads and edits pp checkpoints (docs/checkpoints.md) for the tests.

Usage:
  checkpoint_files.py summary STEP_DIR
      prints each safetensors file's metadata format and first names, and
      state.json's version, step, cursor, global batch and saved mesh;
  checkpoint_files.py set-shape FILE NAME DIM,DIM...
      rewrites tensor NAME's shape in FILE's header (the data unchanged).
"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    length = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + length]), data[8 + length:]


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
        text = json.dumps(header).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + data)
    else:
        sys.exit(f"unknown command '{sys.argv[1]}'")


if __name__ == "__main__":
    main()

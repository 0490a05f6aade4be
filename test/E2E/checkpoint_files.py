#!/usr/bin/python3
"""Reads and edits pp checkpoints (docs/checkpoints.md) for the tests.

A checkpoint of format version 3 keeps each stage's tensors in files of its
own (parameters-stage-SSSSS.safetensors, optimizer-stage-SSSSS.safetensors),
which state.json's "files" lists; versions 1 and 2 keep them in
parameters.safetensors and optimizer.safetensors. FILE below is a
safetensors file, or a checkpoint's directory STEP_DIR: then the file of it
holding the tensor (or the metadata key) NAME.

Usage:
  checkpoint_files.py summary STEP_DIR
      prints the metadata format and first names of the parameter files and
      of the optimizer files, and state.json's version, step, cursor,
      global batch and saved mesh;
  checkpoint_files.py writers STEP_DIR
      prints each file state.json lists: its name, what it holds, its stage,
      the job rank that wrote it and its machine, numbered in the order the
      machines first appear;
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
      rewrites STEP_DIR as pp wrote checkpoints before the digests and the
      files per stage: format version 1, every stage's tensors merged into
      parameters.safetensors and optimizer.safetensors, no "files";
  checkpoint_files.py rehash STEP_DIR
      records the digests of STEP_DIR's files as they are now in its
      state.json (docs/checkpoints.md), so that only the value checks see
      an edit.
"""
import hashlib
import json
import os
import struct
import sys

SINGLE_FILES = {"parameters": "parameters.safetensors",
                "optimizer": "optimizer.safetensors"}


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


def read_state(directory):
    with open(f"{directory}/state.json") as f:
        return json.load(f)


def write_state(directory, state):
    with open(f"{directory}/state.json", "w") as f:
        json.dump(state, f, indent=2)


def files_of(directory, holds):
    """The names of the files of the checkpoint DIRECTORY holding HOLDS
    ("parameters" or "optimizer"), in name order."""
    state = read_state(directory)
    if state["format_version"] < 3:
        return [SINGLE_FILES[holds]]
    return sorted(name for name, record in state["files"].items()
                  if record["holds"] == holds)


def resolve(path, name):
    """PATH, or the file of the checkpoint directory PATH holding the
    tensor or the metadata key NAME."""
    if not os.path.isdir(path):
        return path
    for holds in SINGLE_FILES:
        for file in files_of(path, holds):
            header, _ = read(f"{path}/{file}")
            if name in header or name in header.get("__metadata__", {}):
                return f"{path}/{file}"
    sys.exit(f"no file of '{path}' holds '{name}'")


def merge(directory, names, into):
    """Writes the tensors and metadata of DIRECTORY's files NAMES into one
    file INTO there, and removes them."""
    header, data = {"__metadata__": {}}, b""
    for name in names:
        part, part_data = read(f"{directory}/{name}")
        header["__metadata__"].update(part.pop("__metadata__", {}))
        for tensor, entry in sorted(part.items(),
                                    key=lambda e: e[1]["data_offsets"][0]):
            begin, end = entry["data_offsets"]
            entry["data_offsets"] = [len(data), len(data) + end - begin]
            header[tensor] = entry
            data += part_data[begin:end]
        os.remove(f"{directory}/{name}")
    write(f"{directory}/{into}", header, data)


def main():
    if sys.argv[1] == "summary":
        directory = sys.argv[2]
        for holds in ("parameters", "optimizer"):
            names = set()
            for file in files_of(directory, holds):
                header, _ = read(f"{directory}/{file}")
                names |= set(header)
            print(holds, header["__metadata__"]["format"], sorted(names)[:3])
        state = read_state(directory)
        print(state["format_version"], state["step"],
              state["consumed_samples"], state["global_batch"],
              state["saved_from"]["mesh"])
    elif sys.argv[1] == "writers":
        machines = {}
        for name, listed in sorted(read_state(sys.argv[2])["files"].items()):
            machine = machines.setdefault(listed["writer_machine"],
                                          len(machines))
            print(name, listed["holds"], "stage", listed["stage"],
                  "rank", listed["writer_rank"], "machine", machine)
    elif sys.argv[1] == "set-shape":
        path, name, dims = sys.argv[2:5]
        path = resolve(path, name)
        header, data = read(path)
        header[name]["shape"] = [int(d) for d in dims.split(",")]
        write(path, header, data)
    elif sys.argv[1] == "flip-byte":
        path, name, byte = sys.argv[2:5]
        path = resolve(path, name)
        header, data = read(path)
        at = header[name]["data_offsets"][0] + int(byte)
        edit_data(path, name, int(byte), bytes([data[at] ^ 0xFF]))
    elif sys.argv[1] == "swap-offsets":
        path, first, second = sys.argv[2:5]
        path = resolve(path, first)
        header, data = read(path)
        a, b = header[first], header[second]
        assert a["data_offsets"][1] - a["data_offsets"][0] == \
            b["data_offsets"][1] - b["data_offsets"][0], "sizes differ"
        a["data_offsets"], b["data_offsets"] = \
            b["data_offsets"], a["data_offsets"]
        write(path, header, data)
    elif sys.argv[1] == "set-value":
        path, name, element, value = sys.argv[2:6]
        edit_data(resolve(path, name), name, 4 * int(element),
                  struct.pack("<f", float(value)))
    elif sys.argv[1] == "set-metadata":
        path, key, value = sys.argv[2:5]
        path = resolve(path, key)
        header, data = read(path)
        header["__metadata__"][key] = value
        write(path, header, data)
    elif sys.argv[1] == "drop-metadata":
        path, key = sys.argv[2:4]
        path = resolve(path, key)
        header, data = read(path)
        del header["__metadata__"][key]
        write(path, header, data)
    elif sys.argv[1] == "downgrade":
        directory = sys.argv[2]
        for holds, single in SINGLE_FILES.items():
            merge(directory, files_of(directory, holds), single)
        state = read_state(directory)
        state["format_version"] = 1
        del state["files"]
        write_state(directory, state)
    elif sys.argv[1] == "rehash":
        directory = sys.argv[2]
        state = read_state(directory)
        for holds in SINGLE_FILES:
            for name in files_of(directory, holds):
                state["files"].setdefault(name, {}).update(
                    record(f"{directory}/{name}"))
        write_state(directory, state)
    else:
        sys.exit(f"unknown command '{sys.argv[1]}'")


if __name__ == "__main__":
    main()

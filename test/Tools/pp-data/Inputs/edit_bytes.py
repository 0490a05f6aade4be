"""Copies a file with edits: corrupt token files for pp-data's tests.

usage: edit_bytes.py SRC DST [EDIT]...
  u32@OFFSET=VALUE   overwrite the little-endian uint32 at byte OFFSET
  u64@OFFSET=VALUE   overwrite the little-endian uint64 at byte OFFSET
  flip@OFFSET        flip the lowest bit of the byte at OFFSET
  size=N             keep only the first N bytes
  append=TEXT        add TEXT's bytes at the end
"""

import struct
import sys


def edit(data, change):
    name, _, value = change.partition("=")
    if name == "size":
        return data[: int(value)]
    if name == "append":
        return data + value.encode()
    kind, _, offset = name.partition("@")
    offset = int(offset)
    if kind == "flip":
        data[offset] ^= 1
        return data
    packed = struct.pack({"u32": "<I", "u64": "<Q"}[kind], int(value))
    data[offset : offset + len(packed)] = packed
    return data


def main():
    source, target, *changes = sys.argv[1:]
    with open(source, "rb") as file:
        data = bytearray(file.read())
    for change in changes:
        data = edit(data, change)
    with open(target, "wb") as file:
        file.write(data)


if __name__ == "__main__":
    main()

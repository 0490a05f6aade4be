#!/usr/bin/python3
"""Writes damaged copies of a TorchScript archive that has a tensor
storage `data/0`, for the importer's checks of the archive's bytes:

    python3 damage_archive.py GOOD.pt OUTPUT_DIR

- short_storage.pt: data/0 holds half its bytes (a tensor reaches past it);
- empty_storage.pt: data/0 holds no bytes;
- bad_crc.pt: one byte of data/0 flipped, its CRC-32 left as it was;
- deflated.pt: whole, every entry deflated (torch.jit.save stores them);
- huge_string.pt: data.pkl's first string claims 2^32 - 16 bytes (its
  CRC-32 rewritten to match).
"""
import os
import pickletools
import sys
import zipfile


def rewrite(good, path, change, compression=zipfile.ZIP_STORED,
            entry="/data/0"):
    """Copies archive `good` to `path`, the bytes of the entry whose name
    ends in `entry` through `change`."""
    with zipfile.ZipFile(good) as source, \
            zipfile.ZipFile(path, "w", compression) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith(entry):
                data = change(data)
            target.writestr(info.filename, data)


def huge_string(pickle):
    """`pickle` with its first BINUNICODE's length set to 2^32 - 16."""
    for opcode, _, position in pickletools.genops(pickle):
        if opcode.name == "BINUNICODE":
            length = (2**32 - 16).to_bytes(4, "little")
            return pickle[:position + 1] + length + pickle[position + 5:]
    raise SystemExit("data.pkl has no BINUNICODE string")


def flip_byte(good, path):
    """Copies `good` to `path` with data/0's first byte flipped in place,
    so that its CRC-32 no longer matches."""
    with zipfile.ZipFile(good) as source:
        info = next(i for i in source.infolist()
                    if i.filename.endswith("/data/0"))
    with open(good, "rb") as f:
        raw = bytearray(f.read())
    # The local header: 30 bytes, then the name and the extra field.
    name_size = int.from_bytes(raw[info.header_offset + 26:
                                   info.header_offset + 28], "little")
    extra_size = int.from_bytes(raw[info.header_offset + 28:
                                    info.header_offset + 30], "little")
    raw[info.header_offset + 30 + name_size + extra_size] ^= 0xff
    with open(path, "wb") as f:
        f.write(raw)


if __name__ == "__main__":
    good, out = sys.argv[1], sys.argv[2]
    rewrite(good, os.path.join(out, "short_storage.pt"),
            lambda data: data[:len(data) // 2])
    rewrite(good, os.path.join(out, "empty_storage.pt"), lambda data: b"")
    flip_byte(good, os.path.join(out, "bad_crc.pt"))
    rewrite(good, os.path.join(out, "deflated.pt"), lambda data: data,
            zipfile.ZIP_DEFLATED)
    rewrite(good, os.path.join(out, "huge_string.pt"), huge_string,
            entry="/data.pkl")

#!/usr/bin/env python3
"""Writes a damaged copy of a torch.export archive, for the error tests.

    damage_archive.py IN.pt2 OUT.pt2 truncate RECORD BYTES
        RECORD (a path inside the archive's folder) keeps its first BYTES
    damage_archive.py IN.pt2 OUT.pt2 drop-weight NAME
        the weights config loses its entry NAME
    damage_archive.py IN.pt2 OUT.pt2 resize NAME SIZE
        the weights config's entry NAME gets size SIZE at dimension 0
    damage_archive.py IN.pt2 OUT.pt2 drop RECORD
        RECORD is left out
    damage_archive.py IN.pt2 OUT.pt2 flip RECORD
        RECORD's first byte is inverted in the file (its CRC-32 no longer
        matches)

Standard library only: CI has no torch 2.x.
"""
import json
import sys
import zipfile


def main():
    source, target, action = sys.argv[1:4]
    arguments = sys.argv[4:]
    with zipfile.ZipFile(source) as archive:
        entries = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as out:
        for info, data in entries:
            record = info.filename.split("/", 1)[1]
            if action == "drop" and record == arguments[0]:
                continue
            if action == "truncate" and record == arguments[0]:
                data = data[:int(arguments[1])]
            if action == "drop-weight" and record.endswith(
                    "_weights_config.json"):
                config = json.loads(data)
                del config["config"][arguments[0]]
                data = json.dumps(config).encode()
            if action == "resize" and record.endswith(
                    "_weights_config.json"):
                config = json.loads(data)
                meta = config["config"][arguments[0]]["tensor_meta"]
                meta["sizes"][0]["as_int"] = int(arguments[1])
                data = json.dumps(config).encode()
            out.writestr(info.filename, data)
    if action == "flip":
        with zipfile.ZipFile(target) as archive:
            info = next(info for info in archive.infolist()
                        if info.filename.split("/", 1)[1] == arguments[0])
        with open(target, "r+b") as f:
            # The data follows the 30-byte local header, its name and extra.
            f.seek(info.header_offset + 26)
            name, extra = (int.from_bytes(f.read(2), "little")
                           for _ in range(2))
            f.seek(info.header_offset + 30 + name + extra)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0xFF]))


if __name__ == "__main__":
    main()

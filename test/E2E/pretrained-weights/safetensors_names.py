#!/usr/bin/python3
"""Prints the tensor names of a safetensors file, sorted, one line, and its
metadata: what pretrained-weights.test compares between the file
transformers' save_pretrained wrote and the one pp-run --save-weights did.

    safetensors_names.py FILE
"""

import json
import struct
import sys


def main():
    data = open(sys.argv[1], "rb").read()
    header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
    metadata = header.pop("__metadata__", {})
    print("names:", " ".join(sorted(header)))
    print("dtypes:", " ".join(sorted({e["dtype"] for e in header.values()})))
    print("metadata:", json.dumps(metadata, sort_keys=True))


if __name__ == "__main__":
    main()

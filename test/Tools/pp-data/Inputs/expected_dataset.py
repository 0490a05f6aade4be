"""Writes the pp token dataset that `pp-data pack` should write for some
text files, built from docs/tools/pp-data.md's layout independently of pp.

usage: expected_dataset.py WIDTH OUT TEXT...
"""

import hashlib
import struct
import sys


def main():
    width, out, *texts = sys.argv[1:]
    width = int(width)
    tokens = []
    for text in texts:
        with open(text, "rb") as file:
            tokens += list(file.read()) + [256]
    payload = struct.pack("<%d%s" % (len(tokens), "H" if width == 2 else "I"),
                          *tokens)
    header = b"PPTOKENS" + struct.pack("<IIQQII", 1, width, len(tokens),
                                       len(texts), 257, max(tokens))
    with open(out, "wb") as file:
        file.write(header + hashlib.sha256(payload).digest() + payload)


if __name__ == "__main__":
    main()

"""Compares a token dataset pp-data pack wrote with the reference one
(xz-compressed, as test/models/tokenizers/make_tokenizers.py writes them)
and prints the first difference: the header field, or the token position,
the expected and the written token and the tokens around it (spelled from
the tokenizer.json vocabulary when one is given).

usage: compare_tokens.py EXPECTED.bin.xz GOT.bin [TOKENIZER.json]
"""

import json
import lzma
import struct
import sys


def read(data):
    magic, version, width, count, documents, vocabulary, largest = \
        struct.unpack_from("<8sIIQQII", data)
    tokens = struct.unpack_from("<%d%s" % (count, "H" if width == 2 else "I"),
                                data, 72)
    header = {"magic": magic, "version": version, "width": width,
              "count": count, "documents": documents,
              "vocabulary": vocabulary, "largest": largest,
              "checksum": data[40:72].hex()}
    return header, tokens


def spellings(path):
    if not path or not path.endswith(".json"):
        return {}
    with open(path, encoding="utf-8") as file:
        tokenizer = json.load(file)
    names = {i: t for t, i in tokenizer["model"]["vocab"].items()}
    names.update({t["id"]: t["content"] for t in tokenizer["added_tokens"]})
    return names


def main():
    expected_path, got_path, *tokenizer = sys.argv[1:]
    expected, expected_tokens = read(lzma.decompress(open(expected_path, "rb").read()))
    got, got_tokens = read(open(got_path, "rb").read())
    names = spellings(tokenizer[0] if tokenizer else None)
    for position, (want, have) in enumerate(zip(expected_tokens, got_tokens)):
        if want != have:
            around = slice(max(position - 8, 0), position + 8)
            show = lambda ts: " ".join("%d%s" % (t, "(%r)" % names[t] if t in names else "")
                                       for t in ts)
            print("token %d: expected %s, got %s" % (position, show([want]), show([have])))
            print("expected around it: " + show(expected_tokens[around]))
            print("got around it:      " + show(got_tokens[around]))
            return 1
    for field in expected:
        if expected[field] != got[field]:
            print("header %s: expected %s, got %s" % (field, expected[field], got[field]))
            return 1
    print("same %d tokens" % expected["count"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

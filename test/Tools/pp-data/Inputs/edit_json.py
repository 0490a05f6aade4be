"""Writes a copy of a JSON file with some values replaced, for tests of
files that are almost right.

usage: edit_json.py IN OUT PATH=VALUE...

PATH is dotted (model.type, added_tokens.1.id); a list index one past the
end appends. VALUE is JSON; a PATH= with no value deletes the entry.
"""

import json
import sys


def main():
    source, target, *edits = sys.argv[1:]
    with open(source, encoding="utf-8") as file:
        document = json.load(file)
    for edit in edits:
        path, value = edit.split("=", 1)
        *parents, last = path.split(".")
        node = document
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        key = int(last) if isinstance(node, list) else last
        if value == "":
            del node[key]
        elif isinstance(node, list) and key == len(node):
            node.append(json.loads(value))
        else:
            node[key] = json.loads(value)
    with open(target, "w", encoding="utf-8") as file:
        json.dump(document, file, ensure_ascii=False)


if __name__ == "__main__":
    main()

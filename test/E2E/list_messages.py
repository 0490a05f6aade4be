#!/usr/bin/python3
"""Prints the tensors a package's stages send and receive.

Usage: list_messages.py MANIFEST

One line per tensor of each message of each stage function, in the
manifest's order: FUNCTION KIND PEER NAME SHAPE (e.g. `stage0_forward send
1 act3 2x5x16`), then `parameters` and the name and holding stages of each
parameter several stages hold.
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        manifest = json.load(f)
    for stage in manifest["stages"]:
        for function in stage["functions"]:
            for message in function.get("messages", []):
                for tensor in message["tensors"]:
                    print(function["function"], message["kind"],
                          message["peer"], tensor["name"],
                          "x".join(str(d) for d in tensor["shape"]))
    print("parameters")
    for parameter in manifest["parameters"]:
        if "stages" in parameter:
            print(parameter["name"], parameter["stages"])


if __name__ == "__main__":
    main()

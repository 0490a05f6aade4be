"""The per-rank line of a pp-run metrics file, for the memory checks."""
import json
import sys


def rank_figures(path):
    """The "ranks" list of metrics file `path`: one dict per rank (its
    place in the mesh and the bytes it holds); exits when there is none."""
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "ranks" in record:
                return record["ranks"]
    sys.exit(f"{path}: no per-rank line")

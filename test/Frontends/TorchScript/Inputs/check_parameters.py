#!/usr/bin/python3
"""Checks that the parameters of an imported program (pp-opt's output) are
exactly the module's parameters that a Hugging Face fixture's reference
lists (`kind: parameter`), and that none of its buffers (rotary inv_freq,
position_ids) is one: buffers and constants do not train.

    check_parameters.py PROGRAM.mlir FAMILY.reference.json
"""
import json
import re
import sys

program = open(sys.argv[1]).read()
reference = json.load(open(sys.argv[2]))
signature = program[program.index("func.func @main"):]
signature = signature[:signature.index("{\n")]
got = re.findall(r'pp\.name = "([^"]+)", pp\.role = "parameter"', signature)
want = [p["name"] for p in reference["parameters"]
        if p["kind"] == "parameter"]
buffers = [p["name"] for p in reference["parameters"]
           if p["kind"] != "parameter"]
problems = []
if len(got) != len(set(got)):
    problems.append("a parameter appears twice")
if set(got) != set(want):
    problems.append("missing %s, extra %s" % (sorted(set(want) - set(got)),
                                              sorted(set(got) - set(want))))
trained = sorted(set(buffers) & set(got))
if trained:
    problems.append("buffers %s train" % trained)
if problems:
    sys.exit("%s: %s" % (reference["family"], "; ".join(problems)))
print("%s: %d parameters, PyTorch's; %d buffers constant" % (
    reference["family"], len(got), len(buffers)))

#!/usr/bin/python3
"""Rewrites an opset-17 model the way opsets 18 and later write it.

Usage: upgrade_opset.py IN.onnx OPSET OUT.onnx

libonnx 1.12 (and its version converter) stops at opset 17, and PyTorch
1.13 exports up to 17. This makes, from a PyTorch export, the forms
PyTorch 2's exporter writes from opset 18 on: ReduceMean, ReduceMax,
ReduceMin and ReduceProd take their axes as an input instead of an
attribute, and a Split into equal parts says num_outputs instead of
giving the sizes. Everything else keeps its meaning in opsets 18 to 21.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

REDUCTIONS_WITH_AXES_INPUT = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"}


def constant_values(model):
    """The values of Constant nodes and initializers, by name."""
    values = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def main():
    source, opset, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    model = onnx.load(source)
    values = constant_values(model)
    for node in model.graph.node:
        if node.op_type in REDUCTIONS_WITH_AXES_INPUT:
            axes = [a for a in node.attribute if a.name == "axes"]
            if axes:
                name = f"{node.output[0]}_axes"
                model.graph.initializer.append(
                    numpy_helper.from_array(np.array(axes[0].ints, dtype=np.int64), name))
                node.input.append(name)
                node.attribute.remove(axes[0])
        if node.op_type == "Split" and len(node.input) > 1:
            sizes = values.get(node.input[1])
            if sizes is not None and len(set(sizes.tolist())) == 1:
                del node.input[1]
                node.attribute.append(helper.make_attribute("num_outputs", len(node.output)))
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = opset
    onnx.save(model, target)


main()

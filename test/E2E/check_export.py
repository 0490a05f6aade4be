#!/usr/bin/python3
"""Checks a model that `pp-run --export-onnx` wrote against the model it
trained and its --save-params file.

Usage: check_export.py MODEL EXPORTED.onnx PARAMS

MODEL is the trained .onnx or .onnxtxt file. The exported model must pass
onnx.checker; every parameter in PARAMS (f32 master copies) must be an
initializer of it in MODEL's type with exactly the saved values (FLOAT),
or those values rounded to nearest even (FLOAT16), every other
initializer must be one of
MODEL's with its values, and its nodes must be MODEL's, each input the
same but for the untied copies NAME.1, NAME.2, ... of an initializer NAME
(later readers of a shared initializer, SharedInitializers.cpp). A
parameter that is no initializer must be stored transposed: some other
initializer holds its transpose (ParameterRule.cpp). Prints how many
parameters training changed, how many copies the export added and how many
parameters it stores transposed.
"""
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parameter_file import read_parameters  # noqa: E402
from trained_params import load  # noqa: E402


def initializers(model):
    return {i.name: i for i in model.graph.initializer}


def original_name(name, originals):
    """The initializer of MODEL that the exported `name` copies."""
    match = re.fullmatch(r"(.*)\.[0-9]+", name)
    if name in originals or not match or match.group(1) not in originals:
        return name
    return match.group(1)


def main(model_path, exported_path, params_path):
    model, exported = load(model_path), onnx.load(exported_path)
    onnx.checker.check_model(exported, full_check=True)
    parameters = read_parameters(params_path)
    originals, written = initializers(model), initializers(exported)

    # Weights the model stores transposed under another name (a Linear's
    # weight folded by the exporter) train in module layout: their stored
    # initializer holds the trained transpose.
    stored = {}
    for name, values in parameters.items():
        if name in written or values.ndim != 2:
            continue
        for other, init in written.items():
            if other not in parameters and np.array_equal(
                    numpy_helper.to_array(init), values.T):
                stored[other] = name
                originals.setdefault(name, onnx.numpy_helper.from_array(
                    numpy_helper.to_array(originals[other]).T, name))
                written[name] = onnx.numpy_helper.from_array(values, name)
                break

    changed = copies = 0
    for name, values in parameters.items():
        init = written.get(name)
        original = originals[original_name(name, originals)]
        if init is None or init.data_type != original.data_type:
            sys.exit(f"parameter {name} is no initializer of the export in "
                     "the model's type")
        if original.data_type == onnx.TensorProto.FLOAT16:
            values = values.astype(np.float16)
        if not np.array_equal(numpy_helper.to_array(init), values):
            sys.exit(f"initializer {name} differs from the saved parameter")
        source = numpy_helper.to_array(original)
        changed += not np.array_equal(source, values)
    for name, init in written.items():
        if name in stored:
            continue
        source = original_name(name, originals)
        copies += source != name
        if name not in parameters and not np.array_equal(
                numpy_helper.to_array(init),
                numpy_helper.to_array(originals[source])):
            sys.exit(f"initializer {name} is no parameter but changed")

    if len(model.graph.node) != len(exported.graph.node):
        sys.exit("the export has other nodes than the model")
    for before, after in zip(model.graph.node, exported.graph.node):
        renamed = [original_name(i, originals) for i in after.input]
        if renamed != list(before.input) or before.op_type != after.op_type:
            sys.exit(f"node {after.name} reads {list(after.input)}, "
                     f"the model's {list(before.input)}")
    print(f"checked: {len(parameters)} parameters ({changed} changed by "
          f"training), {copies} untied copies, {len(stored)} stored "
          f"transposed")


if __name__ == "__main__":
    main(*sys.argv[1:])

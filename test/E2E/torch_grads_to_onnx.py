#!/usr/bin/python3
"""Renames the gradients of a TorchScript module to its ONNX export's.

Usage: torch_grads_to_onnx.py MODULE.pt MODEL.onnx TORCH_GRADS ONNX_GRADS

torch.onnx.export renames and reshapes parameters: a Linear weight that
constant folding transposes becomes an initializer `onnx::MatMul_N` holding
its transpose, and initializers with equal values are merged into one (all
LayerNorm weights are ones at initialization, so a model's LayerNorms share
one weight). The ONNX model therefore computes the same function of other
variables, and the gradient with respect to an initializer is the sum over
the module's parameters it stands for (each transposed back when it was
stored transposed). pp's import trains a generated `onnx::` initializer
that MatMuls of one name scope read as their right operand as the weight
that scope names (`/blocks.0/fc/MatMul`: `blocks.0.fc.weight`) in module
layout (frontends/onnx/ParameterRule.cpp): its gradient is the module's
untransposed, under that name.

Matches each float initializer of MODEL.onnx to the parameters of
MODULE.pt holding the same values (as they are, or transposed), and writes
TORCH_GRADS (pp-torch-reference --save-grads on MODULE.pt) under the ONNX
names to ONNX_GRADS, for compare_gradients.py against pp-run --save-grads on
MODEL.onnx, and prints one line: how many initializers stand for how many
parameters, how many are transposed, how many shared, and the initializers
that match no parameter (buffers such as rotary tables: freeze them in
pp-run with --freeze, so that neither side has their gradient). Fails when
a parameter of the module matches no initializer.
"""
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from parameter_file import read_parameters, write_parameters

module_path, onnx_path, torch_grads_path, onnx_grads_path = sys.argv[1:5]
parameters = {name: p.detach().numpy()
              for name, p in torch.jit.load(module_path).named_parameters()}
torch_grads = read_parameters(torch_grads_path)
graph = onnx.load(onnx_path).graph
initializers = {i.name: numpy_helper.to_array(i) for i in graph.initializer
                if i.data_type == onnx.TensorProto.FLOAT}


def scoped_weight(name):
    """The weight pp names the generated initializer `name` after, or None."""
    readers = [n for n in graph.node if name in n.input]
    scopes = {n.name.rsplit("/", 1)[0] for n in readers}
    if not name.startswith("onnx::") or initializers[name].ndim != 2 or \
            not readers or len(scopes) != 1 or \
            any(n.op_type != "MatMul" or n.input[1] != name for n in readers):
        return None
    scope = scopes.pop()
    if not scope.startswith("/") or scope == "/":
        return None
    return scope[1:].replace("/", ".") + ".weight"


matched, onnx_grads, unmatched = set(), {}, []
transposed, shared = 0, 0
for name, value in initializers.items():
    gradient, parts = np.zeros(value.shape, np.float64), 0
    stored_transposed, source = False, None
    for parameter, initial in parameters.items():
        if initial.shape == value.shape and np.array_equal(initial, value):
            oriented = torch_grads.get(parameter)
        elif initial.ndim == 2 and initial.T.shape == value.shape and \
                np.array_equal(initial.T, value):
            oriented = torch_grads.get(parameter)
            oriented = None if oriented is None else oriented.T
            transposed += 1
            stored_transposed = True
        else:
            continue
        matched.add(parameter)
        parts, source = parts + 1, parameter
        if oriented is not None:  # None: the loss does not depend on it.
            gradient += oriented
    if parts == 1 and stored_transposed and scoped_weight(name):
        if source in torch_grads:
            onnx_grads[scoped_weight(name)] = torch_grads[source]
    elif parts:
        onnx_grads[name] = gradient.astype(np.float32)
        shared += parts > 1
    else:
        unmatched.append(name)
missing = sorted(parameters.keys() - matched)
if missing:
    sys.exit(f"parameters of {module_path} that no initializer of "
             f"{onnx_path} holds: {missing}")
write_parameters(onnx_grads_path, onnx_grads)
print(f"{len(onnx_grads)} initializers stand for {len(matched)} parameters: "
      f"{transposed} transposed, {shared} shared; no parameter: "
      f"{' '.join(unmatched) or 'none'}")

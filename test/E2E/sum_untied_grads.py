#!/usr/bin/python3
"""Sums the gradients of an ONNX model's untied copies onto their original.

Usage: sum_untied_grads.py MODEL.onnx PP_GRADS SUMMED_GRADS

pp's ONNX import gives every node that reads a merged initializer (one that
several nodes read, its elements all equal) its own copy: the first reader
keeps the name NAME, the later ones read NAME.1, NAME.2, ... The merged
initializer stands for the sum of those copies, so the gradient with
respect to it is the sum of theirs: PP_GRADS (pp-run --save-grads on
MODEL.onnx) with every NAME.N, where NAME is an initializer of MODEL.onnx
and NAME.N is not, added onto NAME, written to SUMMED_GRADS for
compare_gradients.py against torch_grads_to_onnx.py's output. Prints how
many copies it summed onto how many initializers.
"""
import re
import sys

import numpy as np
import onnx

from parameter_file import read_parameters, write_parameters

if len(sys.argv) != 4:
    sys.exit(__doc__)
onnx_path, pp_grads_path, summed_path = sys.argv[1:4]
initializers = {i.name for i in onnx.load(onnx_path).graph.initializer}
grads = read_parameters(pp_grads_path)
summed, originals, copies = {}, set(), 0
for name in sorted(grads):  # NAME sorts before its copies NAME.N.
    copy = re.fullmatch(r"(.*)\.[0-9]+", name)
    if name in initializers or not copy or copy[1] not in initializers:
        summed[name] = grads[name].astype(np.float64)
        continue
    original = copy[1]
    summed[original] = summed.get(original, 0) + grads[name]
    originals.add(original)
    copies += 1
write_parameters(summed_path,
                 {name: g.astype(np.float32) for name, g in summed.items()})
print(f"{copies} copies summed onto {len(originals)} "
      "initializers")

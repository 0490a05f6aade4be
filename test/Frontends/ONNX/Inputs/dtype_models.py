"""Writes the models of dtypes.test into the directory argv[1].

float16.onnx: a float16 Gemm whose initializers keep their values in both
of ONNX's encodings (raw bytes, and int32_data holding the bit patterns),
plus a bfloat16 initializer. complex64.onnx: an initializer pp cannot
import. large_weight.onnx: an f32 Gemm whose weight holds 1e5, beyond
fp16's range (65504), which fp16 training refuses before step 1.
"""
import sys

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

out = sys.argv[1]


def model(name, nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    checker.check_model(m)
    save(m, f"{out}/{name}.onnx")


model("float16",
      [helper.make_node("Gemm", ["x", "w", "b"], ["y"], alpha=0.5),
       helper.make_node("Identity", ["s"], ["t"])],
      [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["batch", 2])],
      [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["batch", 2]),
       helper.make_tensor_value_info("t", TensorProto.BFLOAT16, [1])],
      [numpy_helper.from_array(
          np.array([[1.5, -2], [0.25, 3]], dtype=np.float16), "w"),
       helper.make_tensor("b", TensorProto.FLOAT16, [2],
                          np.array([0.5, 1], dtype=np.float16)),
       helper.make_tensor("s", TensorProto.BFLOAT16, [1], [1.0])])

model("complex64",
      [helper.make_node("Identity", ["c"], ["y"])],
      [],
      [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [2])],
      [numpy_helper.from_array(np.array([1 + 2j, 3 - 4j], np.complex64), "c")])

model("large_weight",
      [helper.make_node("Gemm", ["x", "w"], ["y"])],
      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2])],
      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
      [numpy_helper.from_array(
          np.array([[1, 1e5], [0.5, 2]], dtype=np.float32), "w")])

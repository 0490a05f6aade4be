"""Writes the models of equal-initializers.test into the directory argv[1].

folded.onnx: an embedding table `emb` [6, 4] read by a Gather, an LM head
`head_t` [4, 6] holding emb's transpose (as torch.onnx.export's constant
folding writes a tied head), a copy `emb_copy` of emb (float_data instead
of raw bytes) read by a second Gather, and two zero biases `b1`, `b2`
(equal, but all elements equal: never reported).
"""
import sys

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper, save

out = sys.argv[1]
emb = (np.arange(24, dtype=np.float32).reshape(6, 4) - 11.5) / 7.0
copy = helper.make_tensor("emb_copy", TensorProto.FLOAT, [6, 4],
                          emb.flatten().tolist())
nodes = [
    helper.make_node("Gather", ["emb", "ids"], ["x"], name="embed"),
    helper.make_node("Gather", ["emb_copy", "ids"], ["x2"], name="embed2"),
    helper.make_node("Add", ["x", "x2"], ["s"], name="mix"),
    helper.make_node("Add", ["s", "b1"], ["s1"], name="bias1"),
    helper.make_node("MatMul", ["s1", "head_t"], ["logits0"], name="head"),
    helper.make_node("Add", ["logits0", "b2"], ["logits"], name="bias2"),
]
graph = helper.make_graph(
    nodes, "folded",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 3])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                   ["batch", 3, 6])],
    [numpy_helper.from_array(emb, "emb"), copy,
     numpy_helper.from_array(np.ascontiguousarray(emb.T), "head_t"),
     numpy_helper.from_array(np.zeros(4, np.float32), "b1"),
     numpy_helper.from_array(np.zeros(6, np.float32), "b2")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
checker.check_model(model)
save(model, f"{out}/folded.onnx")

#!/usr/bin/python3
"""Writes two models unlike mlp6 into DIR, for test/E2E/varied-models.test.

batched.onnx: opset 13, a symbolic batch, a 3-D input through MatMul with a
rank-2 weight (batched matmul), Flatten of a rank-3 tensor, a gate
(Sigmoid * Tanh), Sub with a scalar initializer on the left, initializers
also listed as graph inputs (as old exporters do), outputs "logits" and
"feat" (rank 3).
three-inputs.onnx: opset 17, a static batch of 4, three inputs used on
different layers, Gemm with alpha, a Constant, and a skip from the first
input to the last node.

Usage: make_varied_models.py DIR
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T
rng = np.random.default_rng(1)
def w(name, *shape): return numpy_helper.from_array(rng.uniform(-0.5,0.5,size=shape).astype(np.float32), name)

# Model A: 3-D input through MatMul (batched), Flatten axis=2 reshape, diamond, initializers listed as inputs (old exporters)
inits=[w("W1",6,8), w("b1",8), w("W2",8,8), w("W3",16,5), w("c",1)]
nodes=[
 helper.make_node("MatMul",["x","W1"],["m1"],name="/l1/MatMul"),
 helper.make_node("Add",["m1","b1"],["a1"],name="/l1/Add"),
 helper.make_node("Tanh",["a1"],["t1"],name="/act1/Tanh"),
 helper.make_node("MatMul",["t1","W2"],["m2"],name="/l2/MatMul"),
 helper.make_node("Sigmoid",["m2"],["s2"],name="/act2/Sigmoid"),
 helper.make_node("Mul",["s2","t1"],["g"],name="/gate/Mul"),
 helper.make_node("Sub",["c","g"],["g2"],name="/gate/Sub"),
 helper.make_node("Flatten",["g2"],["f"],name="/flat",axis=1),
 helper.make_node("Gemm",["f","W3"],["logits"],name="/head/Gemm"),
 helper.make_node("Identity",["t1"],["feat"],name="/feat"),
]
g=helper.make_graph(nodes,"A",[helper.make_tensor_value_info("x",T.FLOAT,["N",2,6])]+[helper.make_tensor_value_info(i.name,T.FLOAT,list(i.dims)) for i in inits],
 [helper.make_tensor_value_info("logits",T.FLOAT,["N",5]),helper.make_tensor_value_info("feat",T.FLOAT,["N",2,8])],inits)
m=helper.make_model(g,opset_imports=[helper.make_opsetid("",13)]); m.ir_version=7; onnx.checker.check_model(m); onnx.save(m, sys.argv[1] + "/batched.onnx")

# Model B: static batch 4, Gemm transA, three inputs, skip from input 0 to last, Relu chain, Constant
inits=[w("Wa",3,10), w("Wb",10,10), w("bb",10), w("Wc",10,10), w("Wd",2,10), w("Ws",10,3)]
nodes=[
 helper.make_node("Gemm",["xT","Wa"],["h1"],name="g1"),
 helper.make_node("Relu",["h1"],["r1"],name="r1"),
 helper.make_node("Gemm",["r1","Wb","bb"],["h2"],name="g2",alpha=0.7),
 helper.make_node("Relu",["h2"],["r2"],name="r2"),
 helper.make_node("Gemm",["r2","Wc"],["h3"],name="g3",transB=1),
 helper.make_node("Constant",[],["k"],name="k",value=numpy_helper.from_array(np.full((1,10),0.25,np.float32))),
 helper.make_node("Mul",["h3","k"],["h3k"],name="scale"),
 helper.make_node("Gemm",["z","Wd"],["zd"],name="gz"),
 helper.make_node("Add",["h3k","zd"],["h4"],name="join"),
 helper.make_node("MatMul",["xT","Ws"],["skipm"],name="skipmm"),
 helper.make_node("Tanh",["skipm"],["skipt"],name="skiptanh"),
 helper.make_node("Add",["h4","u"],["h5"],name="join2"),
 helper.make_node("Gemm",["h5","Wd"],["out"],name="out",transB=1),
 helper.make_node("Sub",["out","skipt"],["y"],name="final"),
]
inits[-1]=w("Ws",3,2)
g=helper.make_graph(nodes,"B",[helper.make_tensor_value_info("xT",T.FLOAT,[4,3]),helper.make_tensor_value_info("z",T.FLOAT,[4,2]),helper.make_tensor_value_info("u",T.FLOAT,[4,10])],
 [helper.make_tensor_value_info("y",T.FLOAT,[4,2]),helper.make_tensor_value_info("h2",T.FLOAT,[4,10])],inits)
m=helper.make_model(g,opset_imports=[helper.make_opsetid("",17)]); onnx.checker.check_model(m); onnx.save(m, sys.argv[1] + "/three-inputs.onnx")

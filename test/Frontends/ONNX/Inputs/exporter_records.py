"""Writes the models of parameter-rule.test into the directory argv[1].

records.onnx mimics torch.onnx.export(dynamo=True, optimize=True) (IR 10,
opset 18) on a tiny tied LM, with the metadata that exporter writes:

* `embed.weight` [5, 4] and `layer.norm.weight` [4]: PARAMETER records;
* `rotary.inv_freq` [4]: a BUFFER (read on the data path all the same);
* `val_3` [4, 6]: a Linear weight `layer.proj.weight` [6, 4] that the
  optimizer folded into its transpose (`folded_from` names it);
* `val_8` [6, 4]: another, `layer.mlp.up_proj.weight` [4, 6], with no
  folded_from record: only its reader's fx_node and name_scopes name it;
* `val_7` [4, 5]: the tied LM head, the transpose of `embed.weight`;
* `val_5` (Pow's exponent 2.0) and `val_9` [5] (an additive table): no
  records, made by the exporter.

plain.onnx is the same graph without the records, the transposed weights
under state_dict-like names and the exporter's tensors under the names
the TorchScript-based exporter gives them (`onnx::Pow_5`, a table under
`/layer/Constant_output_0`), plus `mask` [4], a float table that only
reaches Where's condition through a Cast, and `shape_f` [3], floats that
only a Reshape's shape reads through a Cast.

The metadata_props fields of ValueInfoProto (4), NodeProto (9) and
TensorProto (16) are newer than the onnx package these tests run with, so
they are appended to each message's bytes as protobuf fields.
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

INPUT_KIND = "pkg.torch.export.graph_signature.InputSpec.kind"


def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def with_metadata(message, number, props):
    """`message` with the metadata_props `props` as field `number`."""
    extra = b"".join(
        field(number, field(1, k.encode()) + field(2, v.encode()))
        for k, v in props.items())
    copy = type(message)()
    copy.ParseFromString(message.SerializeToString() + extra)
    return copy


def fx(target, args, scopes):
    return {
        "pkg.torch.onnx.fx_node":
            f"%{scopes[-1]} : [num_users=1] = call_function[target=torch.ops."
            f"{target}](args = ({args}), kwargs = {{}})",
        "pkg.torch.onnx.name_scopes": repr(scopes),
    }


rng = np.random.default_rng(0)
f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)
embed = f32(5, 4)
proj = f32(6, 4)  # layer.proj.weight, module layout [out, in]
up = f32(4, 6)  # layer.mlp.up_proj.weight
tensors = {
    "embed.weight": embed,
    "layer.norm.weight": f32(4),
    "rotary.inv_freq": f32(4),
    "val_5": np.array(2.0, np.float32),
    "val_3": np.ascontiguousarray(proj.T),
    "val_8": np.ascontiguousarray(up.T),
    "val_7": np.ascontiguousarray(embed.T),
    "val_9": f32(5),
}
records = {
    "embed.weight": {INPUT_KIND: "PARAMETER"},
    "layer.norm.weight": {INPUT_KIND: "PARAMETER"},
    "rotary.inv_freq": {INPUT_KIND: "BUFFER"},
    "val_3": {"pkg.onnxscript.optimizer.folded_from":
              "['layer.proj.weight']"},
    "val_7": {"pkg.onnxscript.optimizer.folded_from": "['embed.weight']"},
}
node_records = {
    "proj": fx("aten.linear.default", "%pow_1, %p_layer_proj_weight",
               ["", "layer", "layer.proj", "linear"]),
    "up": fx("aten.linear.default", "%linear, %p_layer_mlp_up_proj_weight",
             ["", "layer", "layer.mlp", "layer.mlp.up_proj", "linear_1"]),
    "lm_head": fx("aten.linear.default", "%linear_1, %p_embed_weight",
                  ["", "lm_head", "linear_2"]),
}


def nodes(names):
    n = lambda op, ins, outs, name: helper.make_node(
        op, [names.get(i, i) for i in ins], outs, name=name)
    return [
        n("Gather", ["embed.weight", "ids"], ["h"], "embed"),
        n("Mul", ["h", "layer.norm.weight"], ["h2"], "norm"),
        n("Mul", ["h2", "rotary.inv_freq"], ["h3"], "rotary"),
        n("Pow", ["h3", "val_5"], ["p"], "pow"),
        n("MatMul", ["p", "val_3"], ["u"], "proj"),
        n("MatMul", ["u", "val_8"], ["v"], "up"),
        n("MatMul", ["v", "val_7"], ["l"], "lm_head"),
        n("Add", ["l", "val_9"], ["logits"], "bias"),
    ]


def model(graph_nodes, inits, value_info=()):
    graph = helper.make_graph(
        graph_nodes, "tiny",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [2, 3, 5])],
        inits, value_info=value_info)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 10
    return m


out = sys.argv[1]
graph_nodes = [
    with_metadata(node, 9, node_records[node.name])
    if node.name in node_records else node for node in nodes({})
]
inits = [numpy_helper.from_array(v, k) for k, v in tensors.items()]
value_info = [
    with_metadata(
        helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                      tensors[name].shape), 4, props)
    for name, props in records.items()
]
# torch writes no tensor-level records; one here checks that they count.
inits[2] = with_metadata(inits[2], 16, records["rotary.inv_freq"])
value_info = [v for v in value_info if v.name != "rotary.inv_freq"]
save(model(graph_nodes, inits, value_info), f"{out}/records.onnx")

renames = {"val_3": "layer.proj.weight_t", "val_8": "layer.mlp.up.weight_t",
           "val_7": "lm_head.weight", "val_5": "onnx::Pow_5",
           "val_9": "/layer/Constant_output_0"}
plain_nodes = nodes(renames) + [
    helper.make_node("Cast", ["mask"], ["mask_b"], name="mask_cast",
                     to=TensorProto.BOOL),
    helper.make_node("Where", ["mask_b", "h", "h2"], ["masked"],
                     name="where"),
    helper.make_node("Cast", ["shape_f"], ["shape_i"], name="shape_cast",
                     to=TensorProto.INT64),
    helper.make_node("Reshape", ["masked", "shape_i"], ["extra"],
                     name="reshape"),
]
plain_inits = [numpy_helper.from_array(v, renames.get(k, k))
               for k, v in tensors.items()]
plain_inits += [numpy_helper.from_array(np.array([1, 0, 1, 1], np.float32),
                                        "mask"),
                numpy_helper.from_array(np.array([3, 2, 4], np.float32),
                                        "shape_f")]
plain = model(plain_nodes, plain_inits)
plain.graph.output.append(
    helper.make_tensor_value_info("extra", TensorProto.FLOAT, [3, 2, 4]))
plain.ir_version = 8
plain.opset_import[0].version = 17
save(plain, f"{out}/plain.onnx")

// RUN: pp-opt %pp_src_root/test/models/causal-attention.mlir --pp-mark-attention | FileCheck %s
// RUN: pp-opt %s --split-input-file --pp-mark-attention | FileCheck %s --check-prefix=NOT
// RUN: pp-opt %S/Inputs/shared-mask-attention.mlir --pp-mark-attention | FileCheck %s --check-prefix=SHARED
// RUN: pp-opt %pp_src_root/test/models/causal-attention.mlir --pp-attach-loss="loss=cross_entropy:logits" --pp-mark-attention --pp-autodiff | FileCheck %s --check-prefix=GRAD

// The causal self-attention block: the scores' matmul of Q and K^T, the
// scale, the mask (trilu, broadcast), where, softmax and the weighted sum
// with V are attention; the projections, the data movement around the
// heads and the LM head are not.
// CHECK: nn.matmul %{{.*}}, %{{.*}} transpose_rhs {pp.node = "qkv"}
// CHECK: nn.transpose {{.*}} {pp.node = "k_t"}
// CHECK: nn.matmul {{.*}} {pp.attention, pp.node = "scores"}
// CHECK: nn.mul {{.*}} {pp.attention, pp.node = "scale"}
// CHECK: nn.trilu {{.*}} {pp.attention, pp.node = "causal"}
// CHECK: nn.broadcast_to {{.*}} {pp.attention, pp.node = "mask"}
// CHECK: nn.where {{.*}} {pp.attention, pp.node = "masked"}
// CHECK: nn.softmax {{.*}} {pp.attention, pp.node = "softmax"}
// CHECK: nn.matmul {{.*}} {pp.attention, pp.node = "context"}
// CHECK: nn.transpose {{.*}} {pp.node = "context_t"}
// CHECK: nn.matmul {{.*}} transpose_rhs {pp.node = "out_proj"}
// CHECK: nn.matmul {{.*}} transpose_rhs {pp.node = "lm_head"}

// The gradients of attention's ops are attention's; the others' are not.
// GRAD: nn.matmul {{.*}} {pp.node = "lm_head", pp.phase = #pp.phase<backward>}
// GRAD: nn.matmul {{.*}} {pp.attention, pp.node = "context", pp.phase = #pp.phase<backward>}
// GRAD: nn.softmax_grad {{.*}} {pp.attention, pp.node = "softmax", pp.phase = #pp.phase<backward>}
// GRAD: nn.matmul {{.*}} {pp.attention, pp.node = "scores", pp.phase = #pp.phase<backward>}
// GRAD: nn.transpose {{.*}} {pp.node = "k_t", pp.phase = #pp.phase<backward>}

// A mask that two attentions share (made from an input) is attention's.
// SHARED: nn.neg {{.*}} {pp.attention, pp.node = "mask"}
// SHARED: nn.matmul {{.*}} {pp.attention, pp.node = "scores1"}
// SHARED: nn.matmul {{.*}} {pp.attention, pp.node = "context2"}

// A softmax over a layer's output (a matmul with a weight) is a
// classifier's, not attention.
// NOT-LABEL: func.func @main
// NOT-NOT: pp.attention
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"},
                %v: tensor<4x4xf32> {pp.name = "v", pp.role = "parameter"})
    -> (tensor<2x4xf32> {pp.name = "y"}) {
  %h = nn.matmul %x, %w {pp.node = "fc"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %p = nn.softmax %h axis = -1 {pp.node = "softmax"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = nn.matmul %p, %v {pp.node = "out"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Scores of two activations whose probabilities no matmul weights are no
// attention: nothing is marked.
// NOT-LABEL: func.func @main
// NOT-NOT: pp.attention
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"})
    -> (tensor<2x2xf32> {pp.name = "y"}) {
  %s = nn.matmul %x, %x transpose_rhs {pp.node = "gram"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  %p = nn.softmax %s axis = -1 {pp.node = "softmax"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %p : tensor<2x2xf32>
}

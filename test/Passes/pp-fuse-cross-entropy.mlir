// RUN: pp-opt %s --split-input-file --pp-fuse-cross-entropy | FileCheck %s
// RUN: pp-opt %s --split-input-file --pp-fuse-cross-entropy="chunk-rows=3" | FileCheck %s --check-prefix=CHUNK
// RUN: pp-opt %s --split-input-file --pp-fuse-cross-entropy="keep-nodes=lm_head" | FileCheck %s --check-prefix=KEEP
// RUN: pp-opt %s --split-input-file --pp-fuse-cross-entropy="exact-only=true" | FileCheck %s --check-prefix=EXACT
// RUN: pp-opt %pp_src_root/test/models/llama.opset17.onnx --batch-size=2 --pp-attach-loss="loss=cross_entropy:logits microbatch-size=2" --pp-fuse-cross-entropy --pp-autodiff="freeze=lm_head.weight" 2> /dev/null | FileCheck %s --check-prefix=FROZEN
// RUN: pp-opt %pp_src_root/test/models/llama.opset17.onnx --batch-size=2 --pp-attach-loss="loss=cross_entropy:logits microbatch-size=2" --pp-fuse-cross-entropy --pp-autodiff 2> /dev/null | FileCheck %s --check-prefix=GRAD

// An LM head with a [V, D] weight (transpose_rhs) and the loss on its
// logits become one nn.linear_cross_entropy with the head's node; a chunk
// is one batch element's rows (8), whose logits fit in 64 MiB.
// CHECK-LABEL: func.func @main
// CHECK: %[[L:.*]] = nn.linear_cross_entropy %arg0, %arg1, %arg2 reduction<sum> chunk_rows = 8 transpose_weight {pp.node = "lm_head"} : (tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>) -> tensor<f32>
// CHECK-NOT: nn.matmul
// CHECK-NOT: nn.cross_entropy
// CHECK: return %[[L]]
// CHUNK-LABEL: func.func @main
// CHUNK: nn.linear_cross_entropy {{.*}} chunk_rows = 3 transpose_weight
// KEEP-LABEL: func.func @main
// KEEP: nn.matmul
// KEEP: nn.cross_entropy
// With exact-only, two sequences (two chunks) stay separate ops.
// EXACT-LABEL: func.func @main
// EXACT: nn.cross_entropy
// The LLaMA export's head: its gradient is one
// nn.linear_cross_entropy_grad of the loss scale and the fused op's
// operands, whose second result is the head weight's gradient.
// GRAD-LABEL: func.func @main
// GRAD: %[[LOSS:.*]] = nn.linear_cross_entropy %[[H:.*]], %[[W:.*]], %[[Y:.*]] reduction<sum> chunk_rows = 8 transpose_weight {pp.node = "/lm_head/MatMul"}
// GRAD-NEXT: %{{.*}}, %[[DW:.*]] = nn.linear_cross_entropy_grad %{{.*}}, %[[H]], %[[W]], %[[Y]] reduction<sum> chunk_rows = 8 transpose_weight {pp.node = "/lm_head/MatMul", pp.phase = #pp.phase<backward>}
// GRAD: return %[[LOSS]], {{.*}}, %[[DW]] :
// A frozen head weight takes no gradient: the backward makes the hidden
// states' alone.
// FROZEN-LABEL: func.func @main
// FROZEN: nn.linear_cross_entropy_hidden_grad %{{.*}} reduction<sum> chunk_rows = 8 transpose_weight
// FROZEN-NOT: nn.linear_cross_entropy_grad
func.func @main(%h: tensor<2x8x16xf32> {pp.name = "h", pp.role = "input"},
                %w: tensor<40x16xf32> {pp.name = "w", pp.role = "parameter"},
                %y: tensor<2x8xi64> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %logits = nn.matmul %h, %w transpose_rhs {pp.node = "lm_head"} : (tensor<2x8x16xf32>, tensor<40x16xf32>) -> tensor<2x8x40xf32>
  %l = nn.cross_entropy %logits, %y reduction<sum> {pp.node = "loss"} : (tensor<2x8x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A [D, V] weight and a mean over the counted positions; a 2-D hidden
// state is one batch element of 6 rows.
// CHECK-LABEL: func.func @main
// CHECK: nn.linear_cross_entropy %arg0, %arg1, %arg2 reduction<mean> ignore_index = 0 chunk_rows = 6 : (tensor<6x16xf32>, tensor<16x40xf32>, tensor<6xi64>) -> tensor<f32>
// One sequence in one chunk fuses with exact-only too.
// EXACT-LABEL: func.func @main
// EXACT: nn.linear_cross_entropy {{.*}} chunk_rows = 6
func.func @main(%h: tensor<6x16xf32> {pp.name = "h", pp.role = "input"},
                %w: tensor<16x40xf32> {pp.name = "w", pp.role = "parameter"},
                %y: tensor<6xi64> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %logits = nn.matmul %h, %w : (tensor<6x16xf32>, tensor<16x40xf32>) -> tensor<6x40xf32>
  %l = nn.cross_entropy %logits, %y reduction<mean> ignore_index = 0 : (tensor<6x40xf32>, tensor<6xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A batch element's logits past 64 MiB (512 rows of 40000 classes): a
// chunk is the multiple of 256 rows that fits (419 rows fit).
// CHECK-LABEL: func.func @main
// CHECK: nn.linear_cross_entropy {{.*}} chunk_rows = 256 transpose_weight
// One sequence in two chunks stays with exact-only.
// EXACT-LABEL: func.func @main
// EXACT: nn.cross_entropy
func.func @main(%h: tensor<1x512x4xf32> {pp.name = "h", pp.role = "input"},
                %w: tensor<40000x4xf32> {pp.name = "w", pp.role = "parameter"},
                %y: tensor<1x512xi64> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %logits = nn.matmul %h, %w transpose_rhs : (tensor<1x512x4xf32>, tensor<40000x4xf32>) -> tensor<1x512x40000xf32>
  %l = nn.cross_entropy %logits, %y reduction<sum> : (tensor<1x512x40000xf32>, tensor<1x512xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A bias added to the logits (a masked-LM head's) fuses as the op's bias;
// heads that stay: logits something else reads too, a transposed hidden
// state, a dynamic shape.
// CHECK-LABEL: func.func @main
// CHECK: nn.cross_entropy
// CHECK: nn.linear_cross_entropy %arg0, %arg3, %arg5 bias %arg4 reduction<sum> chunk_rows = 8 transpose_weight
// CHECK-COUNT-2: nn.cross_entropy
// CHECK-NOT: nn.linear_cross_entropy
func.func @main(%h: tensor<2x8x16xf32> {pp.name = "h", pp.role = "input"},
                %ht: tensor<2x16x8xf32> {pp.name = "ht", pp.role = "input"},
                %hd: tensor<?x8x16xf32> {pp.name = "hd", pp.role = "input"},
                %w: tensor<40x16xf32> {pp.name = "w", pp.role = "parameter"},
                %b: tensor<40xf32> {pp.name = "b", pp.role = "parameter"},
                %y: tensor<2x8xi64> {pp.name = "labels", pp.role = "label"},
                %yd: tensor<?x8xi64> {pp.name = "labels_d", pp.role = "label"})
    -> (tensor<f32>, tensor<2x8x40xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %logits = nn.matmul %h, %w transpose_rhs : (tensor<2x8x16xf32>, tensor<40x16xf32>) -> tensor<2x8x40xf32>
  %l0 = nn.cross_entropy %logits, %y reduction<sum> : (tensor<2x8x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  %m = nn.matmul %h, %w transpose_rhs : (tensor<2x8x16xf32>, tensor<40x16xf32>) -> tensor<2x8x40xf32>
  %biased = nn.add %m, %b : (tensor<2x8x40xf32>, tensor<40xf32>) -> tensor<2x8x40xf32>
  %l1 = nn.cross_entropy %biased, %y reduction<sum> : (tensor<2x8x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  %t = nn.matmul %ht, %w transpose_lhs transpose_rhs : (tensor<2x16x8xf32>, tensor<40x16xf32>) -> tensor<2x8x40xf32>
  %l2 = nn.cross_entropy %t, %y reduction<sum> : (tensor<2x8x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  %d = nn.matmul %hd, %w transpose_rhs : (tensor<?x8x16xf32>, tensor<40x16xf32>) -> tensor<?x8x40xf32>
  %l3 = nn.cross_entropy %d, %yd reduction<sum> : (tensor<?x8x40xf32>, tensor<?x8xi64>) -> tensor<f32>
  return %l0, %logits, %l1, %l2, %l3 : tensor<f32>, tensor<2x8x40xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

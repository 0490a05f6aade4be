// RUN: pp-opt %s --split-input-file --pp-mark-attention --pp-fuse-attention | FileCheck %s
// RUN: pp-opt %s --split-input-file --pp-fuse-attention="keep-nodes=softmax" | FileCheck %s --check-prefix=KEEP
// RUN: pp-opt %pp_src_root/test/models/causal-attention.mlir --pp-attach-loss="loss=cross_entropy:logits" --pp-mark-attention --pp-fuse-attention --pp-autodiff | FileCheck %s --check-prefix=GRAD

// A GPT-2 export's attention: scores of Q and K^T, a scale, an additive
// causal bias, softmax and the weighted sum with V become one nn.attention
// with the scores' node and mark; the constants only it read go.
// CHECK-LABEL: func.func @main
// CHECK-NOT: arith.constant dense<1.250000e-01>
// CHECK: %[[O:.*]] = nn.attention %arg0, %arg1, %arg2 bias %arg3 scale = 1.250000e-01 fill = 0.000000e+00 {pp.attention, pp.node = "scores"} : (tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>, tensor<2x3x4x8xf32>, tensor<2x1x4x4xf32>) -> tensor<2x3x4x8xf32>
// CHECK-NOT: nn.softmax
// CHECK-NOT: nn.matmul
// CHECK: return %[[O]]
// KEEP-LABEL: func.func @main
// KEEP: nn.softmax
func.func @main(%q: tensor<2x3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<2x3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<2x3x4x8xf32> {pp.name = "v", pp.role = "input"},
                %causal: tensor<2x1x4x4xf32> {pp.name = "causal", pp.role = "input"})
    -> tensor<2x3x4x8xf32> {
  %s = nn.matmul %q, %kt {pp.node = "scores"} : (tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x4x4xf32>
  %c = arith.constant dense<0.125> : tensor<f32>
  %scaled = nn.mul %s, %c {pp.node = "scale"} : (tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  %biased = nn.add %scaled, %causal {pp.node = "bias"} : (tensor<2x3x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x3x4x4xf32>
  %p = nn.softmax %biased axis = -1 {pp.node = "softmax"} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %o = nn.matmul %p, %v {pp.node = "context"} : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %o : tensor<2x3x4x8xf32>
}

// -----

// TorchScript's masked_fill (the fill where the mask is true) after a
// division by a constant, with the key transposed by the matmul.
// CHECK-LABEL: func.func @main
// CHECK: nn.attention %arg0, %arg1, %arg2 mask %{{.*}} scale = 4.000000e+00 divide fill = 0xFFF0000000000000 fill_where_true transpose_key
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %k: tensor<3x4x8xf32> {pp.name = "k", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> tensor<3x4x8xf32> {
  %s = nn.matmul %q, %k transpose_rhs : (tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x4xf32>
  %four = arith.constant dense<4.0> : tensor<f32>
  %scaled = nn.div %s, %four : (tensor<3x4x4xf32>, tensor<f32>) -> tensor<3x4x4xf32>
  %upper = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = nn.where %upper, %ninf, %scaled : (tensor<4x4xi1>, tensor<f32>, tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %masked axis = 2 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// A scale as a constant on the left, no mask.
// CHECK-LABEL: func.func @main
// CHECK: nn.attention %arg0, %arg1, %arg2 scale = 2.500000e-01 fill = 0.000000e+00 {pp.attention} :
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> tensor<3x4x8xf32> {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %quarter = arith.constant dense<0.25> : tensor<f32>
  %scaled = nn.mul %quarter, %s : (tensor<f32>, tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %scaled axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// An attention whose result is the next attention's query: both fuse, in
// order.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]] = nn.attention %arg0, %arg1, %arg2 scale = 1.000000e+00 fill = 0.000000e+00
// CHECK: nn.attention %[[A]], %arg3, %arg4 scale = 1.000000e+00 fill = 0.000000e+00
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"},
                %kt2: tensor<3x8x4xf32> {pp.name = "kt2", pp.role = "input"},
                %v2: tensor<3x4x8xf32> {pp.name = "v2", pp.role = "input"})
    -> tensor<3x4x8xf32> {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %s axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  %s2 = nn.matmul %o, %kt2 : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %p2 = nn.softmax %s2 axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o2 = nn.matmul %p2, %v2 : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o2 : tensor<3x4x8xf32>
}

// -----

// Probabilities that something else reads stay unfused.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> (tensor<3x4x8xf32>, tensor<3x4x4xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %s axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o, %p : tensor<3x4x8xf32>, tensor<3x4x4xf32>
}

// -----

// A bias made from a parameter stays (nn.attention gives the bias no
// gradient).
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"},
                %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %b = nn.add %s, %w : (tensor<3x4x4xf32>, tensor<4x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %b axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// Dropout on the probabilities stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %p0 = nn.softmax %s axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.dropout %p0 ratio = 1.000000e-01 key = 7 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// A key broadcast over the batch stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"},
                %kt1: tensor<8x4xf32> {pp.name = "kt1", pp.role = "input"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt1 : (tensor<3x4x8xf32>, tensor<8x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %s axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// A scale that is not a constant stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"},
                %t: tensor<f32> {pp.name = "t", pp.role = "input"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %m = nn.mul %s, %t : (tensor<3x4x4xf32>, tensor<f32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %m axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// A constant divided by the scores stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %c = arith.constant dense<2.0> : tensor<f32>
  %d = nn.div %c, %s : (tensor<f32>, tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %d axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// A softmax over another axis stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %s axis = 1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// A bias that is a product of two activations, as the scores are, stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"},
                %q2: tensor<3x4x8xf32> {pp.name = "q2", pp.role = "input"},
                %kt2: tensor<3x8x4xf32> {pp.name = "kt2", pp.role = "input"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %b = nn.matmul %q2, %kt2 : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %a = nn.add %s, %b : (tensor<3x4x4xf32>, tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %a axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// -----

// A query that something else reads stays (its gradient would be a sum
// in another order).
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> (tensor<3x4x8xf32>, tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %s axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o, %q : tensor<3x4x8xf32>, tensor<3x4x8xf32>
}

// -----

// A query that is also the value stays.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.attention
// CHECK: nn.softmax
// CHECK-NOT: nn.attention
func.func @main(%q: tensor<3x4x8xf32> {pp.name = "q", pp.role = "input"},
                %kt: tensor<3x8x4xf32> {pp.name = "kt", pp.role = "input"},
                %v: tensor<3x4x8xf32> {pp.name = "v", pp.role = "input"})
    -> (tensor<3x4x8xf32>) {
  %s = nn.matmul %q, %kt : (tensor<3x4x8xf32>, tensor<3x8x4xf32>) -> tensor<3x4x4xf32>
  %p = nn.softmax %s axis = -1 : (tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  %o = nn.matmul %p, %q : (tensor<3x4x4xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
  return %o : tensor<3x4x8xf32>
}

// The causal block's attention (where keeps the scores where the mask is
// true) differentiates to one nn.attention_grad, marked as attention, with
// the forward's operands: no probabilities saved.
// GRAD: %[[O:.*]] = nn.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale = 5.000000e-01 fill = 0xFFF0000000000000 {pp.attention, pp.node = "scores"}
// GRAD-NOT: nn.softmax
// GRAD: nn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale = 5.000000e-01 fill = 0xFFF0000000000000 {pp.attention, pp.node = "scores", pp.phase = #pp.phase<backward>}
// GRAD-NOT: nn.softmax_grad

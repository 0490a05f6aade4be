// RUN: pp-opt %S/Inputs/transposed-tied-head.mlir --pp-localize-parameter-derived \
// RUN:   | FileCheck %s --check-prefix=HEAD
// RUN: pp-opt %S/Inputs/transposed-tied-head.mlir --pp-localize-parameter-derived \
// RUN:   --pp-autodiff --pp-partition=split-points=lm_head --pp-insert-send-recv \
// RUN:   2>/dev/null | FileCheck %s --check-prefix=PIPELINE
// RUN: pp-opt %s --pp-localize-parameter-derived | FileCheck %s

// Inputs/transposed-tied-head.mlir: a tied embedding whose LM head reads
// the table scaled and transposed by a node of its own next to the
// embedding, as an exporter may write it: the chain (the constant stays
// where it is; pp-partition copies constants into every stage) becomes the
// LM head's, just before its matmul.
// HEAD-LABEL: func.func @main(
// HEAD-SAME: %[[WTE:arg1]]: tensor<7x4xf32> {pp.name = "wte"
// HEAD: nn.gather %[[WTE]], %{{.*}} {pp.node = "embed"}
// HEAD: %[[SCALE:.*]] = arith.constant {pp.node = "head_weight"}
// HEAD-NOT: pp.node = "head_weight"
// HEAD: %[[TANH:.*]] = nn.tanh %{{.*}} {pp.node = "act"}
// HEAD-NEXT: %[[SCALED:.*]] = nn.mul %[[WTE]], %[[SCALE]] {pp.node = "lm_head"}
// HEAD-NEXT: %[[HEAD:.*]] = nn.transpose %[[SCALED]] permutation = [1, 0] {pp.node = "lm_head"}
// HEAD-NEXT: nn.matmul %[[TANH]], %[[HEAD]] {pp.node = "lm_head"}

// On two stages the table is held by both, each returns its part of the
// table's gradient, and only activations and their gradients travel: no
// transfer carries the transposed table (4x7) or its gradient.
// PIPELINE-LABEL: func.func @main(
// PIPELINE-SAME: tensor<7x4xf32> {pp.holder_stages = array<i64: 0, 1>, pp.name = "wte", pp.role = "parameter", pp.stage = 0 : i64}
// PIPELINE-SAME: tensor<7x4xf32> {pp.gradient_part = 0 : i64, pp.name = "wte", pp.role = "gradient"}
// PIPELINE-SAME: tensor<7x4xf32> {pp.gradient_part = 1 : i64, pp.name = "wte", pp.role = "gradient"}
// PIPELINE-SAME: boundary = [{bytes = 9.600000e+01 : f64, name = "act"}]
// PIPELINE-NOT: pp.transfer {{.*}}x7xf32
// PIPELINE: pp.transfer @pipeline %{{.*}} from 0 to 1 names ["act"] : tensor<2x3x4xf32>
// PIPELINE-NOT: pp.transfer {{.*}}x7xf32
// PIPELINE: pp.transfer @pipeline %{{.*}} from 1 to 0 names ["lm_head.grad"] : tensor<2x3x4xf32>
// PIPELINE-NOT: pp.transfer
// PIPELINE: return

// A weight's transpose that its own node uses, two other nodes use and the
// program returns: each other node computes its own copy before its first
// use; the original stays for its node and the result. Ops reading an
// input are not parameter-derived and stay as they are, and so do values
// of constants alone (`k`: a constant's transpose), as constants do.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg0]]: tensor<2x4xf32>
// CHECK-SAME: %[[W:arg1]]: tensor<4x4xf32>
// CHECK: %[[K:.*]] = nn.transpose %{{.*}} permutation = [1, 0] {pp.node = "k"}
// CHECK-NEXT: %[[T:.*]] = nn.transpose %[[W]] permutation = [1, 0] {pp.node = "a"}
// CHECK-NEXT: %[[A:.*]] = nn.matmul %[[X]], %[[T]] {pp.node = "a"}
// CHECK-NEXT: %[[TB:.*]] = nn.transpose %[[W]] permutation = [1, 0] {pp.node = "b"}
// CHECK-NEXT: %[[B:.*]] = nn.matmul %[[A]], %[[TB]] {pp.node = "b"}
// CHECK-NEXT: %[[S:.*]] = nn.tanh %[[B]] {pp.node = "c"}
// CHECK-NEXT: %[[TC:.*]] = nn.transpose %[[W]] permutation = [1, 0] {pp.node = "c"}
// CHECK-NEXT: %[[C:.*]] = nn.matmul %[[S]], %[[TC]] {pp.node = "c"}
// CHECK-NEXT: %[[C2:.*]] = nn.matmul %[[C]], %[[TC]] {pp.node = "c"}
// CHECK-NEXT: %[[C3:.*]] = nn.matmul %[[C2]], %[[K]] {pp.node = "c"}
// CHECK-NEXT: return %[[C3]], %[[T]]
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<2x4xf32> {pp.name = "y"}, tensor<4x4xf32> {pp.name = "w_t"}) {
  %k = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5]]> : tensor<4x4xf32>
  %kt = nn.transpose %k permutation = [1, 0] {pp.node = "k"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = nn.transpose %w permutation = [1, 0] {pp.node = "a"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = nn.matmul %x, %t {pp.node = "a"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %b = nn.matmul %a, %t {pp.node = "b"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = nn.tanh %b {pp.node = "c"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = nn.matmul %s, %t {pp.node = "c"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %c2 = nn.matmul %c, %t {pp.node = "c"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %c3 = nn.matmul %c2, %kt {pp.node = "c"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %c3, %t : tensor<2x4xf32>, tensor<4x4xf32>
}

// RUN: pp-opt %s --pp-hoist-parameter-casts | FileCheck %s
// RUN: pp-opt %s --pp-hoist-parameter-casts | pp-opt --pp-hoist-parameter-casts | FileCheck %s

// The casts of a parameter's f32 master to bf16 (two nodes reading it, and
// a frozen one) become one argument each, the compute copy, named after its
// master and right after it; the master stays an argument (here an op
// computing in f32 reads it too). Inputs are not parameters: their cast
// stays.
// CHECK-LABEL: func.func @stage0_forward
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
// CHECK-SAME: %[[W:.*]]: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"},
// CHECK-SAME: %[[WC:.*]]: tensor<4x4xbf16> {pp.name = "w", pp.role = "compute_copy"},
// CHECK-SAME: %[[F:.*]]: tensor<4x4xf32> {pp.name = "f", pp.role = "frozen"},
// CHECK-SAME: %[[FC:.*]]: tensor<4x4xbf16> {pp.name = "f", pp.role = "compute_copy"})
// CHECK-NEXT: %[[XC:.*]] = nn.cast %[[X]] : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NEXT: %[[A:.*]] = nn.matmul %[[XC]], %[[WC]] {pp.node = "fc1"}
// CHECK-NEXT: %[[B:.*]] = nn.matmul %[[A]], %[[WC]] {pp.node = "fc2"}
// CHECK-NEXT: %[[C:.*]] = nn.matmul %[[B]], %[[FC]] {pp.node = "fc3"}
// CHECK-NEXT: %{{.*}} = nn.neg %[[W]] : (tensor<4x4xf32>)
// CHECK-NOT: nn.cast
// CHECK: return
func.func @stage0_forward(
    %x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
    %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"},
    %f: tensor<4x4xf32> {pp.name = "f", pp.role = "frozen"})
    -> tensor<4x4xf32> attributes {pp.stage = 0 : i64} {
  %xc = nn.cast %x : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  %w1 = nn.cast %w {pp.node = "fc1"} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
  %a = nn.matmul %xc, %w1 {pp.node = "fc1"} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %w2 = nn.cast %w {pp.node = "fc2"} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
  %b = nn.matmul %a, %w2 {pp.node = "fc2"} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %f1 = nn.cast %f {pp.node = "fc3"} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
  %c = nn.matmul %b, %f1 {pp.node = "fc3"} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %n = nn.neg %w : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}

// A backward casts the master again: it takes the copy too. The gradient's
// cast back to f32 stays (it reads no parameter).
// CHECK-LABEL: func.func @stage0_backward
// CHECK-SAME: %[[W:.*]]: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"},
// CHECK-SAME: %[[WC:.*]]: tensor<4x4xbf16> {pp.name = "w", pp.role = "compute_copy"},
// CHECK-SAME: %[[G:.*]]: tensor<2x4xbf16> {pp.name = "saved:g", pp.role = "saved"})
// CHECK-NEXT: nn.matmul %[[G]], %[[WC]] transpose_rhs
// CHECK-NEXT: %[[GW:.*]] = nn.matmul %[[G]], %[[G]] transpose_lhs
// CHECK-NEXT: nn.cast %[[GW]] {pp.node = "fc1"} : (tensor<4x4xbf16>) -> tensor<4x4xf32>
// Functions that are not stages are left alone.
// CHECK-LABEL: func.func @helper
// CHECK: nn.cast
func.func @stage0_backward(
    %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"},
    %g: tensor<2x4xbf16> {pp.name = "saved:g", pp.role = "saved"})
    -> (tensor<2x4xbf16>, tensor<4x4xf32>) attributes {pp.stage = 0 : i64} {
  %w1 = nn.cast %w {pp.node = "fc1"} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
  %d = nn.matmul %g, %w1 transpose_rhs {pp.node = "fc1"} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %gw = nn.matmul %g, %g transpose_lhs {pp.node = "fc1"} : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<4x4xbf16>
  %dw = nn.cast %gw {pp.node = "fc1"} : (tensor<4x4xbf16>) -> tensor<4x4xf32>
  return %d, %dw : tensor<2x4xbf16>, tensor<4x4xf32>
}

func.func @helper(%w: tensor<4xf32> {pp.name = "w", pp.role = "parameter"}) -> tensor<4xbf16> {
  %c = nn.cast %w : (tensor<4xf32>) -> tensor<4xbf16>
  return %c : tensor<4xbf16>
}

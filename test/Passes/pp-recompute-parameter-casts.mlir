// RUN: pp-opt %s --pp-apply-precision=precision=bf16 --pp-autodiff --pp-recompute-parameter-casts | FileCheck %s

// The backward reads a bf16 copy of w2 of its own (the input gradient of
// the second layer needs it), cast from the f32 master again, part of w2's
// node, in the backward; not the forward's copy, which would be saved per
// microbatch in flight.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[W2:arg2]]: tensor<4x4xf32> {pp.name = "w2", pp.role = "parameter"}
// CHECK: %[[FORWARD:.*]] = nn.cast %[[W2]] {pp.node = "fc2"} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
// CHECK: nn.matmul %{{.*}}, %[[FORWARD]] {pp.node = "fc2"}
// CHECK: %[[BACKWARD:.*]] = nn.cast %[[W2]] {pp.node = "fc2", pp.phase = #pp.phase<backward>} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
// CHECK: nn.matmul %{{.*}}, %[[BACKWARD]] transpose_rhs {pp.node = "fc2", pp.phase = #pp.phase<backward>}
// CHECK-NOT: %[[FORWARD]]
// CHECK: return
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<4x4xf32> {pp.name = "w1", pp.role = "parameter"},
                %w2: tensor<4x4xf32> {pp.name = "w2", pp.role = "parameter"},
                %labels: tensor<2xi64> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %h = nn.matmul %x, %w1 {pp.node = "fc1"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %t = nn.tanh %h {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = nn.matmul %t, %w2 {pp.node = "fc2"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = nn.cross_entropy %y, %labels reduction<sum> {pp.node = "loss"} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

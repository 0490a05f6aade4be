// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff | FileCheck %s
// RUN: pp-opt %S/Inputs/tied-loss.mlir --pp-autodiff | FileCheck %s --check-prefix=TIED

// The seed is a loss_scale argument; gradients are results named after their
// parameters; every backward op carries its forward node.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg0]]: tensor<2x3xf32>
// CHECK-SAME: %[[W3:arg4]]: tensor<3x4xf32>
// CHECK-SAME: %[[T:arg5]]: tensor<2x3xf32>
// CHECK-SAME: %[[SCALE:arg6]]: tensor<f32> {pp.name = "loss_scale", pp.role = "loss_scale"}
// CHECK-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<4x3xf32> {pp.name = "w1", pp.role = "gradient"}, tensor<4xf32> {pp.name = "b1", pp.role = "gradient"}, tensor<4x4xf32> {pp.name = "w2", pp.role = "gradient"}, tensor<3x4xf32> {pp.name = "w3", pp.role = "gradient"})
// CHECK: %[[H:.*]] = nn.add %{{.*}}, %arg2 {pp.node = "fc1"}
// CHECK: %[[A:.*]] = nn.tanh %[[H]]
// CHECK: %[[S:.*]] = nn.add %{{.*}}, %[[H]] {pp.node = "skip"}
// CHECK: %[[Y:.*]] = nn.matmul %[[S]], %[[W3]] transpose_rhs
// CHECK: %[[LOSS:.*]] = nn.mse_loss %[[Y]], %[[T]]
// CHECK: %[[DY:.*]] = nn.mse_loss_grad %[[SCALE]], %[[Y]], %[[T]] reduction<sum> {pp.node = "loss", pp.phase = #pp.phase<backward>}
// dS = dY * W3 and dW3 = dY^T * S.
// CHECK: %[[DS:.*]] = nn.matmul %[[DY]], %[[W3]] {pp.node = "out", pp.phase = #pp.phase<backward>}
// CHECK: %[[DW3:.*]] = nn.matmul %[[DY]], %[[S]] transpose_lhs {pp.node = "out"
// CHECK: %[[DA:.*]] = nn.matmul %[[DS]], %arg3 {pp.node = "fc2"
// CHECK: %[[DW2:.*]] = nn.matmul %[[DS]], %[[A]] transpose_lhs {pp.node = "fc2"
// CHECK: %[[DH1:.*]] = nn.tanh_grad %[[DA]], %[[A]] {pp.node = "act"
// The skip connection's contribution and the main path's are summed on fc1,
// the node that defines h.
// CHECK: %[[DH:.*]] = nn.add %[[DS]], %[[DH1]] {pp.node = "fc1", pp.phase = #pp.phase<backward>}
// CHECK: %[[DB1:.*]] = nn.sum_to %[[DH]] shape = [4] {pp.node = "fc1"
// CHECK: %[[DW1:.*]] = nn.matmul %[[DH]], %[[X]] transpose_lhs {pp.node = "fc1"
// CHECK: return %[[LOSS]], %[[DW1]], %[[DB1]], %[[DW2]], %[[DW3]]

// A parameter that two nodes use (an embedding tied to its LM head): its
// gradient comes in two parts, one per node in program order, never added
// up here, so that any partition returns the same parts.
// TIED: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<4x4xf32> {pp.gradient_part = 0 : i64, pp.name = "tied", pp.role = "gradient"}, tensor<4x4xf32> {pp.gradient_part = 1 : i64, pp.name = "tied", pp.role = "gradient"}, tensor<4x4xf32> {pp.name = "mid", pp.role = "gradient"})
// TIED: %[[HEAD:.*]] = nn.matmul %{{.*}} transpose_lhs {pp.node = "head"
// TIED: %[[EMBED:.*]] = nn.matmul %{{.*}} transpose_lhs {pp.node = "embed"
// TIED-NOT: nn.add
// TIED: return %{{.*}}, %[[EMBED]], %[[HEAD]], %{{.*}}

// RUN: pp-opt %s --pp-autodiff | FileCheck %s

// A linear layer on a batch of sequences: the weight's gradient is one GEMM
// over the batch's rows flattened ([2*3, 4]^T x [2*3, 5] for the plain
// weight, [2*3, 5]^T x [2*3, 4] for the transposed one), not a gradient per
// batch element summed by sum_to.
// CHECK-LABEL: func.func @main(
// CHECK-NOT: nn.sum_to
// CHECK: %[[X:[0-9]+]] = nn.reshape %arg0 shape = [6, 4] {pp.node = "linear"
// CHECK: %[[G:[0-9]+]] = nn.reshape %{{[0-9]+}} shape = [6, 5] {pp.node = "linear"
// CHECK: nn.matmul %[[G]], %[[X]] transpose_lhs {pp.node = "linear"{{.*}} -> tensor<5x4xf32>
// CHECK: %[[X2:[0-9]+]] = nn.reshape %arg0 shape = [6, 4] {pp.node = "plain"
// CHECK: %[[G2:[0-9]+]] = nn.reshape %{{[0-9]+}} shape = [6, 5] {pp.node = "plain"
// CHECK: nn.matmul %[[X2]], %[[G2]] transpose_lhs {pp.node = "plain"{{.*}} -> tensor<4x5xf32>
// CHECK-NOT: nn.sum_to
func.func @main(%x: tensor<2x3x4xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x5xf32> {pp.name = "w", pp.role = "parameter"},
                %v: tensor<5x4xf32> {pp.name = "v", pp.role = "parameter"},
                %t: tensor<2x3x5xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %y = nn.matmul %x, %w {pp.node = "plain"} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %z = nn.matmul %x, %v transpose_rhs {pp.node = "linear"} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %s = nn.add %y, %z {pp.node = "sum"} : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %l = nn.mse_loss %s, %t reduction<sum> {pp.node = "loss"} : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

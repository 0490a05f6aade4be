// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<2x4x8xf32>, %i: tensor<4x8xi64>) {
  // CHECK: nn.reduce_sum %{{.*}} axes = [1] keep_dims : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  %0 = nn.reduce_sum %x axes = [1] keep_dims : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  // CHECK: nn.reduce_mean %{{.*}} axes = [0, -1] : (tensor<2x4x8xf32>) -> tensor<4xf32>
  %1 = nn.reduce_mean %x axes = [0, -1] : (tensor<2x4x8xf32>) -> tensor<4xf32>
  // CHECK: nn.reduce_max %{{.*}} axes = [0, 1, 2] : (tensor<2x4x8xf32>) -> tensor<f32>
  %2 = nn.reduce_max %x axes = [0, 1, 2] : (tensor<2x4x8xf32>) -> tensor<f32>
  // CHECK: nn.reduce_sum %{{.*}} axes = [] : (tensor<4x8xi64>) -> tensor<4x8xi64>
  %3 = nn.reduce_sum %i axes = [] : (tensor<4x8xi64>) -> tensor<4x8xi64>
  return
}

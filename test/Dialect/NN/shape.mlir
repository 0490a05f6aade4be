// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @layout
func.func @layout(%x: tensor<2x4x8xf32>, %b: tensor<8xf32>) {
  // CHECK: nn.transpose %{{.*}} permutation = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %0 = nn.transpose %x permutation = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  // CHECK: nn.reshape %{{.*}} shape = [8, 8] : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %1 = nn.reshape %x shape = [8, 8] : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  // CHECK: nn.broadcast_to %{{.*}} shape = [4, 8] : (tensor<8xf32>) -> tensor<4x8xf32>
  %2 = nn.broadcast_to %b shape = [4, 8] : (tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.sum_to %{{.*}} shape = [1, 8] : (tensor<2x4x8xf32>) -> tensor<1x8xf32>
  %3 = nn.sum_to %x shape = [1, 8] : (tensor<2x4x8xf32>) -> tensor<1x8xf32>
  return
}

// CHECK-LABEL: func @pieces
func.func @pieces(%x: tensor<4x8xf32>, %y: tensor<4x5xf32>) {
  // CHECK: nn.slice %{{.*}} starts = [0, 2] limits = [4, 8] strides = [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  %0 = nn.slice %x starts = [0, 2] limits = [4, 8] strides = [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
  // CHECK: nn.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 1 : (tensor<4x3xf32>, tensor<4x5xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %1 = nn.concat %0, %y, %x axis = 1 : (tensor<4x3xf32>, tensor<4x5xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  // CHECK: nn.split %{{.*}} axis = -1 sizes = [3, 5] : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>)
  %2:2 = nn.split %x axis = -1 sizes = [3, 5] : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>)
  return
}

// Masks and index tensors move through the same ops.
// CHECK-LABEL: func @masks_and_indices
func.func @masks_and_indices(%m: tensor<1x4x4xi1>, %ids: tensor<2x3xi64>) {
  // CHECK: nn.broadcast_to %{{.*}} shape = [2, 4, 4] : (tensor<1x4x4xi1>) -> tensor<2x4x4xi1>
  %0 = nn.broadcast_to %m shape = [2, 4, 4] : (tensor<1x4x4xi1>) -> tensor<2x4x4xi1>
  // CHECK: nn.transpose %{{.*}} permutation = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %1 = nn.transpose %ids permutation = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
  // CHECK: nn.slice %{{.*}} starts = [0, 1] limits = [2, 3] strides = [1, 1] : (tensor<2x3xi64>) -> tensor<2x2xi64>
  %2 = nn.slice %ids starts = [0, 1] limits = [2, 3] strides = [1, 1] : (tensor<2x3xi64>) -> tensor<2x2xi64>
  // CHECK: nn.concat %{{.*}}, %{{.*}} axis = 0 : (tensor<1x4x4xi1>, tensor<2x4x4xi1>) -> tensor<3x4x4xi1>
  %3 = nn.concat %m, %0 axis = 0 : (tensor<1x4x4xi1>, tensor<2x4x4xi1>) -> tensor<3x4x4xi1>
  return
}

// CHECK-LABEL: func @embedding
func.func @embedding(%table: tensor<100x16xf32>, %ids: tensor<2x7xi64>, %m: tensor<3x4x5xf32>, %i: tensor<2xi32>) {
  // CHECK: nn.gather %{{.*}}, %{{.*}} axis = 0 : (tensor<100x16xf32>, tensor<2x7xi64>) -> tensor<2x7x16xf32>
  %0 = nn.gather %table, %ids axis = 0 : (tensor<100x16xf32>, tensor<2x7xi64>) -> tensor<2x7x16xf32>
  // CHECK: nn.gather %{{.*}}, %{{.*}} axis = 1 : (tensor<3x4x5xf32>, tensor<2xi32>) -> tensor<3x2x5xf32>
  %1 = nn.gather %m, %i axis = 1 : (tensor<3x4x5xf32>, tensor<2xi32>) -> tensor<3x2x5xf32>
  return
}

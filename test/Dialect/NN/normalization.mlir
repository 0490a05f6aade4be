// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @softmax
func.func @softmax(%x: tensor<4x8xf32>) {
  // CHECK: nn.softmax %{{.*}} axis = -1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = nn.softmax %x axis = -1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.log_softmax %{{.*}} axis = 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = nn.log_softmax %x axis = 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// CHECK-LABEL: func @layer_norm
func.func @layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %g2: tensor<4x8xf32>) {
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis = 2 epsilon = 1.000000e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %0 = nn.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}} axis = -2 epsilon = 0.000000e+00 : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %1 = nn.layer_norm %x, %g2 axis = -2 epsilon = 0.0 : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.layer_norm %{{.*}} axis = 1 epsilon = 2.500000e-01 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %2 = nn.layer_norm %x axis = 1 epsilon = 0.25 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

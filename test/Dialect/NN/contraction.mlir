// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @matmul
func.func @matmul(%a: tensor<2x4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<8x4xf32>,
                  %d: tensor<3x1x4x8xf32>, %e: tensor<2x8x5xf32>) {
  // CHECK: nn.matmul %{{.*}}, %{{.*}} transpose_rhs : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %0 = nn.matmul %a, %b transpose_rhs : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = nn.matmul %c, %b transpose_lhs transpose_rhs : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : (tensor<3x1x4x8xf32>, tensor<2x8x5xf32>) -> tensor<3x2x4x5xf32>
  %2 = nn.matmul %d, %e : (tensor<3x1x4x8xf32>, tensor<2x8x5xf32>) -> tensor<3x2x4x5xf32>
  return
}

// CHECK-LABEL: func @linear
func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) {
  // CHECK: nn.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %0 = nn.linear %x, %w, %b : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  // CHECK: nn.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %1 = nn.linear %x, %w : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  return
}

// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x6xf32>,
                     %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x5xf32>,
                     %bias: tensor<2x1x8x6xf32>, %mask: tensor<8x6xi1>) {
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 2.500000e-01 fill = 0.000000e+00 : (tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>) -> tensor<2x4x8x5xf32>
  %0 = nn.attention %q, %kt, %v scale = 0.25 fill = 0.0 : (tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>) -> tensor<2x4x8x5xf32>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} scale = 4.000000e+00 divide fill = 0.000000e+00 transpose_key : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x5xf32>, tensor<2x1x8x6xf32>) -> tensor<2x4x8x5xf32>
  %1 = nn.attention %q, %k, %v bias %bias scale = 4.0 divide fill = 0.0 transpose_key : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x5xf32>, tensor<2x1x8x6xf32>) -> tensor<2x4x8x5xf32>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} mask %{{.*}} scale = 2.500000e-01 fill = 0xFFF0000000000000 fill_where_true : (tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>, tensor<2x1x8x6xf32>, tensor<8x6xi1>) -> tensor<2x4x8x5xf32>
  %2 = nn.attention %q, %kt, %v bias %bias mask %mask scale = 0.25 fill = 0xFFF0000000000000 fill_where_true : (tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>, tensor<2x1x8x6xf32>, tensor<8x6xi1>) -> tensor<2x4x8x5xf32>
  return
}

// CHECK-LABEL: func @attention_grad
func.func @attention_grad(%do: tensor<2x4x8x5xf32>, %q: tensor<2x4x8x16xf32>,
                          %kt: tensor<2x4x16x6xf32>, %v: tensor<2x4x6x5xf32>,
                          %mask: tensor<1x4x8x6xi1>) {
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale = 2.500000e-01 fill = -1.000000e+09 : (tensor<2x4x8x5xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>, tensor<1x4x8x6xi1>) -> (tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>)
  %0:3 = nn.attention_grad %do, %q, %kt, %v mask %mask scale = 0.25 fill = -1.0e9 : (tensor<2x4x8x5xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>, tensor<1x4x8x6xi1>) -> (tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32>, tensor<2x4x6x5xf32>)
  return
}

// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @linear_cross_entropy
func.func @linear_cross_entropy(%h: tensor<2x8x16xf32>, %wt: tensor<40x16xf32>,
                                %w: tensor<16x40xf32>, %y: tensor<2x8xi64>,
                                %b: tensor<40xf32>) {
  // CHECK: nn.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} reduction<sum> chunk_rows = 8 transpose_weight : (tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>) -> tensor<f32>
  %0 = nn.linear_cross_entropy %h, %wt, %y reduction<sum> chunk_rows = 8 transpose_weight : (tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>) -> tensor<f32>
  // CHECK: nn.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} reduction<mean> ignore_index = 0 chunk_rows = 3 : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  %1 = nn.linear_cross_entropy %h, %w, %y reduction<mean> ignore_index = 0 chunk_rows = 3 : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  // CHECK: nn.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} reduction<none> chunk_rows = 16 : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>) -> tensor<2x8xf32>
  %2 = nn.linear_cross_entropy %h, %w, %y reduction<none> chunk_rows = 16 : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>) -> tensor<2x8xf32>
  // CHECK: nn.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} reduction<sum> chunk_rows = 8 transpose_weight : (tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>, tensor<40xf32>) -> tensor<f32>
  %3 = nn.linear_cross_entropy %h, %wt, %y bias %b reduction<sum> chunk_rows = 8 transpose_weight : (tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>, tensor<40xf32>) -> tensor<f32>
  return
}

// CHECK-LABEL: func @linear_cross_entropy_grad
func.func @linear_cross_entropy_grad(%g: tensor<f32>, %h: tensor<2x8x16xf32>,
                                     %wt: tensor<40x16xf32>,
                                     %y: tensor<2x8xi64>, %b: tensor<40xf32>) {
  // CHECK: nn.linear_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} reduction<sum> chunk_rows = 8 transpose_weight : (tensor<f32>, tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>) -> (tensor<2x8x16xf32>, tensor<40x16xf32>)
  %0:2 = nn.linear_cross_entropy_grad %g, %h, %wt, %y reduction<sum> chunk_rows = 8 transpose_weight : (tensor<f32>, tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>) -> (tensor<2x8x16xf32>, tensor<40x16xf32>)
  // CHECK: nn.linear_cross_entropy_hidden_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} reduction<sum> chunk_rows = 8 transpose_weight : (tensor<f32>, tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %1 = nn.linear_cross_entropy_hidden_grad %g, %h, %wt, %y reduction<sum> chunk_rows = 8 transpose_weight : (tensor<f32>, tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  // CHECK: nn.linear_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} reduction<sum> chunk_rows = 8 transpose_weight : (tensor<f32>, tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>, tensor<40xf32>) -> (tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<40xf32>)
  %2:3 = nn.linear_cross_entropy_grad %g, %h, %wt, %y bias %b reduction<sum> chunk_rows = 8 transpose_weight : (tensor<f32>, tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<2x8xi64>, tensor<40xf32>) -> (tensor<2x8x16xf32>, tensor<40x16xf32>, tensor<40xf32>)
  return
}

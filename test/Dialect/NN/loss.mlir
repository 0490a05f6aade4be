// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @cross_entropy
func.func @cross_entropy(%logits: tensor<2x7x10xf32>, %labels: tensor<2x7xi64>) {
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} reduction<sum> : (tensor<2x7x10xf32>, tensor<2x7xi64>) -> tensor<f32>
  %0 = nn.cross_entropy %logits, %labels reduction<sum> : (tensor<2x7x10xf32>, tensor<2x7xi64>) -> tensor<f32>
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} reduction<mean> ignore_index = 0 : (tensor<2x7x10xf32>, tensor<2x7xi64>) -> tensor<f32>
  %1 = nn.cross_entropy %logits, %labels reduction<mean> ignore_index = 0 : (tensor<2x7x10xf32>, tensor<2x7xi64>) -> tensor<f32>
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} reduction<none> : (tensor<2x7x10xf32>, tensor<2x7xi64>) -> tensor<2x7xf32>
  %2 = nn.cross_entropy %logits, %labels reduction<none> : (tensor<2x7x10xf32>, tensor<2x7xi64>) -> tensor<2x7xf32>
  return
}

// CHECK-LABEL: func @mse
func.func @mse(%y: tensor<8x4xf32>, %t: tensor<8x4xf32>) {
  // CHECK: nn.mse_loss %{{.*}}, %{{.*}} reduction<mean> : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<f32>
  %0 = nn.mse_loss %y, %t reduction<mean> : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<f32>
  // CHECK: nn.mse_loss %{{.*}}, %{{.*}} reduction<none> : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = nn.mse_loss %y, %t reduction<none> : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// RUN: pp-opt %s --pp-autodiff | FileCheck %s
// RUN: pp-opt %s --pp-autodiff="freeze=w2" | FileCheck %s --check-prefix=FROZEN

// A parameter through nn.split gets a gradient: each used piece's gradient
// goes back to its slice; an unused piece contributes nothing.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<2x6xf32> {pp.name = "w1", pp.role = "gradient"}, tensor<2x2xf32> {pp.name = "w2", pp.role = "gradient"})
// CHECK: %[[A:[0-9]+]]:3 = nn.split
// CHECK: %[[DA:[0-9]+]] = nn.mul %{{.*}}, %arg1 {pp.node = "scale", pp.phase
// CHECK: %[[DP:[0-9]+]] = nn.mul %{{.*}}, %[[A]]#0 {pp.node = "scale"
// CHECK: %[[DA0:[0-9]+]] = nn.slice_grad %[[DA]] input_shape = [2, 6] starts = [0, 0] limits = [2, 2] strides = [1, 1] {pp.node = "split"
// CHECK: %[[DA2:[0-9]+]] = nn.slice_grad %{{.*}} input_shape = [2, 6] starts = [0, 4] limits = [2, 6] strides = [1, 1] {pp.node = "split"
// CHECK: %[[DW1:[0-9]+]] = nn.add %[[DA0]], %[[DA2]] {pp.node = "split"
// CHECK: return %{{.*}}, %[[DW1]], %[[DP]]

// A frozen parameter keeps its role name and gets no gradient.
// FROZEN-LABEL: func.func @main(
// FROZEN-SAME: {pp.name = "w2", pp.role = "frozen"}
// FROZEN-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<2x6xf32> {pp.name = "w1", pp.role = "gradient"})
func.func @main(%w1: tensor<2x6xf32> {pp.name = "w1", pp.role = "parameter"},
                %w2: tensor<2x2xf32> {pp.name = "w2", pp.role = "parameter"},
                %t: tensor<2x2xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %a:3 = nn.split %w1 axis = 1 sizes = [2, 2, 2] {pp.node = "split"} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  %p = nn.mul %a#0, %w2 {pp.node = "scale"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = nn.add %p, %a#2 {pp.node = "sum"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %l = nn.mse_loss %s, %t reduction<sum> {pp.node = "loss"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

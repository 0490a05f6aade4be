// RUN: not pp-opt %s --pp-autodiff="freeze=w[" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not pp-opt %s --pp-autodiff="freeze=w" 2>&1 | FileCheck %s --check-prefix=NOMATCH

// REGEX: error: freeze='w[' is not a valid regular expression: {{.+}}
// NOMATCH: error: freeze='w' matches no parameter (the whole name must match); parameters are: w1, w2
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<2xf32> {pp.name = "w1", pp.role = "parameter"},
                %w2: tensor<2xf32> {pp.name = "w2", pp.role = "parameter"},
                %t: tensor<2xf32> {pp.name = "labels", pp.role = "label"}) -> tensor<f32> {
  %y = nn.mul %x, %w1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %z = nn.mul %y, %w2 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %l = nn.mse_loss %z, %t reduction<sum> : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

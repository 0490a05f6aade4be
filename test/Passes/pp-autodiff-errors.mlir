// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-autodiff

// expected-error @+1 {{pp-autodiff differentiates a program that returns one scalar loss; run pp-attach-loss first}}
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2x3xf32> {
  return %x : tensor<2x3xf32>
}

// -----

func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2x3xf32> {pp.name = "w", pp.role = "parameter"},
                %t: tensor<2x3xf32> {pp.name = "labels", pp.role = "label"}) -> tensor<f32> {
  %y = nn.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{'nn.softmax' op has no gradient rule in pp-autodiff yet}}
  %s = nn.softmax %y axis = 1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = nn.mse_loss %s, %t reduction<sum> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{parameter 'unused' is used by no op of the model; remove it from the model file}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2xf32> {pp.name = "unused", pp.role = "parameter"},
                %t: tensor<2xf32> {pp.name = "labels", pp.role = "label"}) -> tensor<f32> {
  %l = nn.mse_loss %x, %t reduction<sum> : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

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
  // expected-error @+1 {{'nn.relu_grad' op has no gradient rule, but the loss depends on a parameter through it; add its GradientOpInterface rule in dialects/nn/IR/NNGradients.cpp, or freeze the parameters that reach it (--freeze)}}
  %s = nn.relu_grad %y, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = nn.mse_loss %s, %t reduction<sum> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op with several results on the path is differentiated like any other;
// one without a rule is an error even when it has several results.
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2x4xf32> {pp.name = "w", pp.role = "parameter"},
                %g: tensor<4xf32> {pp.name = "g", pp.role = "input"},
                %t: tensor<2x4xf32> {pp.name = "labels", pp.role = "label"}) -> tensor<f32> {
  %y = nn.mul %x, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %n = nn.layer_norm %y axis = 1 epsilon = 1.0e-05 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{'nn.layer_norm_grad' op has no gradient rule}}
  %dx, %dg, %db = nn.layer_norm_grad %n, %y, %g axis = 1 epsilon = 1.0e-05 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %l = nn.mse_loss %dx, %t reduction<sum> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}


// -----

// expected-error @+1 {{pp-autodiff differentiates a program that returns one scalar loss; run pp-attach-loss first}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}, %s: f32) -> f32 {
  return %s : f32
}

// -----

func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2xf32> {pp.name = "w", pp.role = "parameter"},
                %t: tensor<2xf32> {pp.name = "labels", pp.role = "label"}) -> tensor<f32> {
  %a = nn.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{'tensor.generate' op has regions; pp handles a model as one flat block of ops}}
  %g = tensor.generate {
  ^bb0(%i: index):
    %v = tensor.extract %a[%i] : tensor<2xf32>
    tensor.yield %v : f32
  } : tensor<2xf32>
  %l = nn.mse_loss %g, %t reduction<sum> : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %t: tensor<2xf32> {pp.name = "labels", pp.role = "label"},
                %s: tensor<f32> {pp.name = "loss_scale", pp.role = "loss_scale"}) -> tensor<f32> {
  // expected-error @-3 {{the program is already differentiated}}
  %l = nn.mse_loss %x, %t reduction<sum> : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

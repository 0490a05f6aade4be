// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-mark-outputs="microbatch-size=2"

// expected-error @+1 {{the program has a loss; a forward-only program keeps the model's outputs (compile it without pp-attach-loss)}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<f32>
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %l = nn.mse_loss %x, %x reduction<sum> : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{input 'x' has type 'tensor<3xf32>', but microbatch-size=2 needs dimension 0 of size 2}}
func.func @main(%x: tensor<3xf32> {pp.name = "x", pp.role = "input"}) -> (tensor<3xf32> {pp.name = "y"}) {
  return %x : tensor<3xf32>
}

// -----

// expected-error @+1 {{two outputs of the model are named 'y'; a forward-only run writes them by name}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> (tensor<2xf32> {pp.name = "y"}, tensor<2xf32> {pp.name = "y"}) {
  return %x, %x : tensor<2xf32>, tensor<2xf32>
}

// -----

// expected-error @+1 {{the model has no outputs to compute}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) {
  return
}

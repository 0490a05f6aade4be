// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-attach-loss="loss=mse:z"

// expected-error @+1 {{the loss is on output 'z', but the model has no output of that name; its outputs are: y}}
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}) -> (tensor<2x3xf32> {pp.name = "y"}) {
  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// expected-error @+1 {{expected the training program as func.func @main}}
module {
  func.func @model(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

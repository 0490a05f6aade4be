// RUN: pp-opt %s -verify-diagnostics --pp-attach-loss="loss=mse:y microbatch-size=4"

// expected-error @+1 {{input 'x' has type 'tensor<2x3xf32>', but microbatch-size=4 needs dimension 0 of size 4; export the model with batch size 4 or give it a symbolic batch dimension}}
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}) -> (tensor<2x3xf32> {pp.name = "y"}) {
  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

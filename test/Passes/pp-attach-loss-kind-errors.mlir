// RUN: pp-opt %s -verify-diagnostics --pp-attach-loss="loss=hinge:y"

// expected-error @+1 {{unknown loss kind 'hinge'; use mse or cross_entropy}}
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}) -> (tensor<2x3xf32> {pp.name = "y"}) {
  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

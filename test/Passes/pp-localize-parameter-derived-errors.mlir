// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-localize-parameter-derived

// After pp-autodiff the gradient through a weight's transpose is already
// summed on the transpose's node; localizing then would not make each
// copy's gradient its node's part.
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"},
                %g: tensor<4x4xf32> {pp.name = "seed", pp.role = "input"})
    -> (tensor<2x4xf32> {pp.name = "y"}, tensor<4x4xf32>) {
  %t = nn.transpose %w permutation = [1, 0] {pp.node = "t"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = nn.matmul %x, %t {pp.node = "mm"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{'nn.transpose' op is a backward op: pp-localize-parameter-derived runs before pp-autodiff, so that the gradient through each node's copy is that node's part of its parameter's gradient; run it first}}
  %gw = nn.transpose %g permutation = [1, 0] {pp.node = "t", pp.phase = #pp.phase<backward>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y, %gw : tensor<2x4xf32>, tensor<4x4xf32>
}

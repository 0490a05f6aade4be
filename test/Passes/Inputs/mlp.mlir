// The model of mlp-loss.mlir before pp-attach-loss: output y.
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<4x3xf32> {pp.name = "w1", pp.role = "parameter"},
                %b1: tensor<4xf32> {pp.name = "b1", pp.role = "parameter"},
                %w2: tensor<4x4xf32> {pp.name = "w2", pp.role = "parameter"},
                %w3: tensor<3x4xf32> {pp.name = "w3", pp.role = "parameter"})
    -> (tensor<2x3xf32> {pp.name = "y"}) {
  %h0 = nn.matmul %x, %w1 transpose_rhs {pp.node = "fc1"} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %h = nn.add %h0, %b1 {pp.node = "fc1"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %a = nn.tanh %h {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %z = nn.matmul %a, %w2 transpose_rhs {pp.node = "fc2"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = nn.add %z, %h {pp.node = "skip"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = nn.matmul %s, %w3 transpose_rhs {pp.node = "out"} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

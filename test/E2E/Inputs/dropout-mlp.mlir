// An MLP with two dropouts (different keys and ratios) for dropout.test.
func.func @main(%x: tensor<4x16xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<32x16xf32> {pp.name = "fc1.weight", pp.role = "parameter"},
                %w2: tensor<32x32xf32> {pp.name = "fc2.weight", pp.role = "parameter"},
                %w3: tensor<8x32xf32> {pp.name = "fc3.weight", pp.role = "parameter"})
    -> (tensor<4x8xf32> {pp.name = "y"}) {
  %h1 = nn.matmul %x, %w1 transpose_rhs {pp.node = "fc1"} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %a1 = nn.relu %h1 {pp.node = "act1"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %d1 = nn.dropout %a1 ratio = 0.3 key = 101 {pp.node = "drop1"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %h2 = nn.matmul %d1, %w2 transpose_rhs {pp.node = "fc2"} : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
  %a2 = nn.tanh %h2 {pp.node = "act2"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %d2 = nn.dropout %a2 ratio = 0.5 key = 202 {pp.node = "drop2"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = nn.matmul %d2, %w3 transpose_rhs {pp.node = "fc3"} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

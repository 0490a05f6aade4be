// Two attentions, the second over the first's result, that share one
// additive mask computed from an input.
func.func @main(%x: tensor<4x8xf32> {pp.name = "x", pp.role = "input"},
                %m: tensor<4x4xf32> {pp.name = "m", pp.role = "input"})
    -> (tensor<4x8xf32> {pp.name = "y"}) {
  %neg = nn.neg %m {pp.node = "mask"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s1 = nn.matmul %x, %x transpose_rhs {pp.node = "scores1"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %a1 = nn.add %s1, %neg {pp.node = "masked1"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p1 = nn.softmax %a1 axis = -1 {pp.node = "softmax1"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c1 = nn.matmul %p1, %x {pp.node = "context1"} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s2 = nn.matmul %c1, %c1 transpose_rhs {pp.node = "scores2"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %a2 = nn.add %s2, %neg {pp.node = "masked2"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p2 = nn.softmax %a2 axis = -1 {pp.node = "softmax2"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c2 = nn.matmul %p2, %c1 {pp.node = "context2"} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c2 : tensor<4x8xf32>
}

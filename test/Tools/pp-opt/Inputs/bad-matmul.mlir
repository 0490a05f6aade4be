// Input of verify-errors.test: the contracting dimensions disagree.
func.func @bad(%a: tensor<4x8xf32>, %b: tensor<7x4xf32>) -> tensor<4x4xf32> {
  %0 = nn.matmul %a, %b : (tensor<4x8xf32>, tensor<7x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// An MLP with an mse loss attached whose bias add and tanh carry on
// fc1's product alone: nothing but the tanh reads the bias add's result,
// and the tanh's gradient reads its own result.
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<4x3xf32> {pp.name = "w1", pp.role = "parameter"},
                %b1: tensor<4xf32> {pp.name = "b1", pp.role = "parameter"},
                %w2: tensor<3x4xf32> {pp.name = "w2", pp.role = "parameter"},
                %t: tensor<2x3xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %h0 = nn.matmul %x, %w1 transpose_rhs {pp.node = "fc1"} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %h = nn.add %h0, %b1 {pp.node = "fc1"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %a = nn.tanh %h {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = nn.matmul %a, %w2 transpose_rhs {pp.node = "fc2"} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %l = nn.mse_loss %y, %t reduction<sum> {pp.node = "loss"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

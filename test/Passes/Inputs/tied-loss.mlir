// A weight tied between the first and the last node (an embedding and the
// LM head share it), with an mse loss attached (the form pp-autodiff takes).
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x4xf32> {pp.name = "tied", pp.role = "parameter"},
                %v: tensor<4x4xf32> {pp.name = "mid", pp.role = "parameter"},
                %t: tensor<2x4xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %h = nn.matmul %x, %w {pp.node = "embed"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %a = nn.tanh %h {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %z = nn.matmul %a, %v {pp.node = "mid"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %y = nn.matmul %z, %w transpose_rhs {pp.node = "head"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = nn.mse_loss %y, %t reduction<sum> {pp.node = "loss"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// A SiLU-gated MLP (LLaMA's) on a residual stream with an mse loss attached:
// the gate and up projections share their input.
func.func @main(%x: tensor<2x4x8xf32> {pp.name = "x", pp.role = "input"},
                %wg: tensor<16x8xf32> {pp.name = "gate.weight", pp.role = "parameter"},
                %wu: tensor<16x8xf32> {pp.name = "up.weight", pp.role = "parameter"},
                %wd: tensor<8x16xf32> {pp.name = "down.weight", pp.role = "parameter"},
                %t: tensor<2x4x8xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %g = nn.matmul %x, %wg transpose_rhs {pp.node = "gate"} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %s = nn.sigmoid %g {pp.node = "silu"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %a = nn.mul %g, %s {pp.node = "silu"} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %u = nn.matmul %x, %wu transpose_rhs {pp.node = "up"} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %h = nn.mul %a, %u {pp.node = "gated"} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %d = nn.matmul %h, %wd transpose_rhs {pp.node = "down"} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
  %y = nn.add %x, %d {pp.node = "residual"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %l = nn.mse_loss %y, %t reduction<sum> {pp.node = "loss"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

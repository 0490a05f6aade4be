// An MLP of eight equal layers (fc<i>: matmul then tanh, 16 wide) with an
// mse loss attached (the form pp-autodiff takes), for virtual stages and
// memory limits.
func.func @main(%x: tensor<256x16xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<16x16xf32> {pp.name = "w1", pp.role = "parameter"},
                %w2: tensor<16x16xf32> {pp.name = "w2", pp.role = "parameter"},
                %w3: tensor<16x16xf32> {pp.name = "w3", pp.role = "parameter"},
                %w4: tensor<16x16xf32> {pp.name = "w4", pp.role = "parameter"},
                %w5: tensor<16x16xf32> {pp.name = "w5", pp.role = "parameter"},
                %w6: tensor<16x16xf32> {pp.name = "w6", pp.role = "parameter"},
                %w7: tensor<16x16xf32> {pp.name = "w7", pp.role = "parameter"},
                %w8: tensor<16x16xf32> {pp.name = "w8", pp.role = "parameter"},
                %t: tensor<256x16xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %m1 = nn.matmul %x, %w1 transpose_rhs {pp.node = "fc1"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h1 = nn.tanh %m1 {pp.node = "fc1"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %m2 = nn.matmul %h1, %w2 transpose_rhs {pp.node = "fc2"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h2 = nn.tanh %m2 {pp.node = "fc2"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %m3 = nn.matmul %h2, %w3 transpose_rhs {pp.node = "fc3"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h3 = nn.tanh %m3 {pp.node = "fc3"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %m4 = nn.matmul %h3, %w4 transpose_rhs {pp.node = "fc4"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h4 = nn.tanh %m4 {pp.node = "fc4"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %m5 = nn.matmul %h4, %w5 transpose_rhs {pp.node = "fc5"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h5 = nn.tanh %m5 {pp.node = "fc5"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %m6 = nn.matmul %h5, %w6 transpose_rhs {pp.node = "fc6"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h6 = nn.tanh %m6 {pp.node = "fc6"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %m7 = nn.matmul %h6, %w7 transpose_rhs {pp.node = "fc7"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h7 = nn.tanh %m7 {pp.node = "fc7"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %m8 = nn.matmul %h7, %w8 transpose_rhs {pp.node = "fc8"} : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
  %h8 = nn.tanh %m8 {pp.node = "fc8"} : (tensor<256x16xf32>) -> tensor<256x16xf32>
  %l = nn.mse_loss %h8, %t reduction<sum> {pp.node = "loss"} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

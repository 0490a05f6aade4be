// RUN: pp-opt %s -verify-diagnostics=only-expected --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel="tp=2 sp=true"

// Sequence parallelism cannot split a sequence of 3 over 2 devices: refused
// at compile time, naming the fix, instead of hanging at run time.
// expected-error @+1 {{pp-shard-tensor-parallel: sequence parallelism (sp=true) splits the sequence over tp = 2 devices, but input 'tokens' has sequence length 3 (dimension 1), which 2 does not divide; pad the sequence to 4 with pp-run --pad-sequence (or compile for a padded length and pad the data), or use a tp that divides 3, or drop sp}}
func.func @main(%tokens: tensor<2x3xi64> {pp.name = "tokens", pp.role = "input"},
                %tok: tensor<6x8xf32> {pp.name = "tok.weight", pp.role = "parameter"},
                %t: tensor<2x3x8xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %x = nn.gather %tok, %tokens axis = 0 {pp.node = "embed"} : (tensor<6x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %l = nn.mse_loss %x, %t reduction<sum> {pp.node = "loss"} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

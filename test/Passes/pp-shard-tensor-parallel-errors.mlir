// RUN: pp-opt %s -split-input-file -verify-diagnostics=only-expected --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel=tp=4

// Two attention heads do not split over 4 devices.
// expected-error @+1 {{pp-shard-tensor-parallel: parameter 'qkv.weight' ('tensor<24x8xf32>') would be column-parallel, but node 'q_heads' (nn.reshape) splits dimension 2 (size 8) into dimension 2 of [2, 4, 2, 4], whose 2 entries (attention heads) do not split over 4 devices; use a tp that divides the number of attention heads}}
func.func @main(%x: tensor<2x4x8xf32> {pp.name = "x", pp.role = "input"},
                %wqkv: tensor<24x8xf32> {pp.name = "qkv.weight", pp.role = "parameter"},
                %wo: tensor<8x8xf32> {pp.name = "proj.weight", pp.role = "parameter"},
                %t: tensor<2x4x8xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %qkv = nn.matmul %x, %wqkv transpose_rhs {pp.node = "qkv"} : (tensor<2x4x8xf32>, tensor<24x8xf32>) -> tensor<2x4x24xf32>
  %q, %k, %v = nn.split %qkv axis = 2 sizes = [8, 8, 8] {pp.node = "split"} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %q4 = nn.reshape %q shape = [2, 4, 2, 4] {pp.node = "q_heads"} : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %k4 = nn.reshape %k shape = [2, 4, 2, 4] {pp.node = "k_heads"} : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %v4 = nn.reshape %v shape = [2, 4, 2, 4] {pp.node = "v_heads"} : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qh = nn.transpose %q4 permutation = [0, 2, 1, 3] {pp.node = "q_t"} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = nn.transpose %k4 permutation = [0, 2, 3, 1] {pp.node = "k_t"} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vh = nn.transpose %v4 permutation = [0, 2, 1, 3] {pp.node = "v_t"} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %scores = nn.matmul %qh, %kt {pp.node = "scores"} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = nn.softmax %scores axis = -1 {pp.node = "softmax"} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ctx = nn.matmul %p, %vh {pp.node = "context"} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ctxt = nn.transpose %ctx permutation = [0, 2, 1, 3] {pp.node = "context_t"} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %merged = nn.reshape %ctxt shape = [2, 4, 8] {pp.node = "merge"} : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %y = nn.matmul %merged, %wo transpose_rhs {pp.node = "proj"} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %l = nn.mse_loss %y, %t reduction<sum> {pp.node = "loss"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A vocabulary of 6 tokens does not split over 4 devices.
// expected-error @+1 {{pp-shard-tensor-parallel: the vocabulary (6 entries along dimension 0 of parameter 'tok.weight', 'tensor<6x8xf32>') does not split over tp = 4 devices; pad the vocabulary to 8 (a multiple of 4) or use a tp that divides 6}}
func.func @main(%tokens: tensor<2x4xi64> {pp.name = "tokens", pp.role = "input"},
                %tok: tensor<6x8xf32> {pp.name = "tok.weight", pp.role = "parameter"},
                %t: tensor<2x4x8xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %x = nn.gather %tok, %tokens axis = 0 {pp.node = "embed"} : (tensor<6x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %l = nn.mse_loss %x, %t reduction<sum> {pp.node = "loss"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

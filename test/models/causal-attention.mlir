// A causal self-attention block written directly in the nn dialect with the
// data-movement ops a transformer export folds to: one fused QKV projection
// sliced into Q, K and V, heads by reshape and transpose, an i1 causal mask
// made by trilu of a splat true and broadcast over batch and heads, -inf
// filled in through where before softmax, the heads merged back and
// concatenated with the input as a residual, and LM-style logits
// [batch, sequence, vocabulary] for a rank-3 cross-entropy.
func.func @main(%x: tensor<4x4x8xf32> {pp.name = "x", pp.role = "input"},
                %wqkv: tensor<24x8xf32> {pp.name = "wqkv", pp.role = "parameter"},
                %wo: tensor<8x16xf32> {pp.name = "wo", pp.role = "parameter"},
                %wout: tensor<6x8xf32> {pp.name = "wout", pp.role = "parameter"})
    -> (tensor<4x4x6xf32> {pp.name = "logits"}) {
  %qkv = nn.matmul %x, %wqkv transpose_rhs {pp.node = "qkv"} : (tensor<4x4x8xf32>, tensor<24x8xf32>) -> tensor<4x4x24xf32>
  %q = nn.slice %qkv starts = [0, 0, 0] limits = [4, 4, 8] strides = [1, 1, 1] {pp.node = "q"} : (tensor<4x4x24xf32>) -> tensor<4x4x8xf32>
  %k = nn.slice %qkv starts = [0, 0, 8] limits = [4, 4, 16] strides = [1, 1, 1] {pp.node = "k"} : (tensor<4x4x24xf32>) -> tensor<4x4x8xf32>
  %v = nn.slice %qkv starts = [0, 0, 16] limits = [4, 4, 24] strides = [1, 1, 1] {pp.node = "v"} : (tensor<4x4x24xf32>) -> tensor<4x4x8xf32>
  %q4 = nn.reshape %q shape = [4, 4, 2, 4] {pp.node = "q_heads"} : (tensor<4x4x8xf32>) -> tensor<4x4x2x4xf32>
  %k4 = nn.reshape %k shape = [4, 4, 2, 4] {pp.node = "k_heads"} : (tensor<4x4x8xf32>) -> tensor<4x4x2x4xf32>
  %v4 = nn.reshape %v shape = [4, 4, 2, 4] {pp.node = "v_heads"} : (tensor<4x4x8xf32>) -> tensor<4x4x2x4xf32>
  %qh = nn.transpose %q4 permutation = [0, 2, 1, 3] {pp.node = "q_t"} : (tensor<4x4x2x4xf32>) -> tensor<4x2x4x4xf32>
  %kt = nn.transpose %k4 permutation = [0, 2, 3, 1] {pp.node = "k_t"} : (tensor<4x4x2x4xf32>) -> tensor<4x2x4x4xf32>
  %vh = nn.transpose %v4 permutation = [0, 2, 1, 3] {pp.node = "v_t"} : (tensor<4x4x2x4xf32>) -> tensor<4x2x4x4xf32>
  %scores = nn.matmul %qh, %kt {pp.node = "scores"} : (tensor<4x2x4x4xf32>, tensor<4x2x4x4xf32>) -> tensor<4x2x4x4xf32>
  %half = arith.constant dense<0.5> : tensor<f32>
  %scaled = nn.mul %scores, %half {pp.node = "scale"} : (tensor<4x2x4x4xf32>, tensor<f32>) -> tensor<4x2x4x4xf32>
  %ones = arith.constant dense<true> : tensor<4x4xi1>
  %causal = nn.trilu %ones diagonal = 0 {pp.node = "causal"} : (tensor<4x4xi1>) -> tensor<4x4xi1>
  %mask = nn.broadcast_to %causal shape = [4, 2, 4, 4] {pp.node = "mask"} : (tensor<4x4xi1>) -> tensor<4x2x4x4xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = nn.where %mask, %scaled, %ninf {pp.node = "masked"} : (tensor<4x2x4x4xi1>, tensor<4x2x4x4xf32>, tensor<f32>) -> tensor<4x2x4x4xf32>
  %p = nn.softmax %masked axis = -1 {pp.node = "softmax"} : (tensor<4x2x4x4xf32>) -> tensor<4x2x4x4xf32>
  %ctx = nn.matmul %p, %vh {pp.node = "context"} : (tensor<4x2x4x4xf32>, tensor<4x2x4x4xf32>) -> tensor<4x2x4x4xf32>
  %ctxt = nn.transpose %ctx permutation = [0, 2, 1, 3] {pp.node = "context_t"} : (tensor<4x2x4x4xf32>) -> tensor<4x4x2x4xf32>
  %merged = nn.reshape %ctxt shape = [4, 4, 8] {pp.node = "merge"} : (tensor<4x4x2x4xf32>) -> tensor<4x4x8xf32>
  %cat = nn.concat %merged, %x axis = -1 {pp.node = "residual"} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x16xf32>
  %o = nn.matmul %cat, %wo transpose_rhs {pp.node = "out_proj"} : (tensor<4x4x16xf32>, tensor<8x16xf32>) -> tensor<4x4x8xf32>
  %a = nn.tanh %o {pp.node = "act"} : (tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %logits = nn.matmul %a, %wout transpose_rhs {pp.node = "lm_head"} : (tensor<4x4x8xf32>, tensor<6x8xf32>) -> tensor<4x4x6xf32>
  return %logits : tensor<4x4x6xf32>
}

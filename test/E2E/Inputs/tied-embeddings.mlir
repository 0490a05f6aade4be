// A tiny language model whose output head reuses the embedding table
// (tied embeddings, as GPT-2 does), for tied-embeddings.test.
func.func @main(%ids: tensor<2x5xi64> {pp.name = "ids", pp.role = "input"},
                %wte: tensor<11x8xf32> {pp.name = "wte", pp.role = "parameter"},
                %w: tensor<8x8xf32> {pp.name = "mlp.weight", pp.role = "parameter"})
    -> (tensor<2x5x11xf32> {pp.name = "logits"}) {
  %e = nn.gather %wte, %ids axis = 0 {pp.node = "embed"} : (tensor<11x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
  %h = nn.matmul %e, %w transpose_rhs {pp.node = "mlp"} : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
  %a = nn.tanh %h {pp.node = "act"} : (tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %l = nn.matmul %a, %wte transpose_rhs {pp.node = "lm_head"} : (tensor<2x5x8xf32>, tensor<11x8xf32>) -> tensor<2x5x11xf32>
  return %l : tensor<2x5x11xf32>
}

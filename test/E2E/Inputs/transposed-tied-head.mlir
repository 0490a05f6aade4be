// A language model whose LM head reads the embedding table through a
// transpose that is a node of its own, next to the embedding, as an
// exporter may write it (MatMul(x, Transpose(wte)) with the Transpose
// early), for parameter-derived-values.test. Without
// pp-localize-parameter-derived the transposed table (16 x 512) would
// travel from the embedding's stage to the head's per microbatch.
func.func @main(%ids: tensor<2x5xi64> {pp.name = "ids", pp.role = "input"},
                %wte: tensor<512x16xf32> {pp.name = "wte", pp.role = "parameter"},
                %w0: tensor<16x16xf32> {pp.name = "layer0.weight", pp.role = "parameter"},
                %w1: tensor<16x16xf32> {pp.name = "layer1.weight", pp.role = "parameter"},
                %w2: tensor<16x16xf32> {pp.name = "layer2.weight", pp.role = "parameter"},
                %w3: tensor<16x16xf32> {pp.name = "layer3.weight", pp.role = "parameter"})
    -> (tensor<2x5x512xf32> {pp.name = "logits"}) {
  %e = nn.gather %wte, %ids axis = 0 {pp.node = "embed"} : (tensor<512x16xf32>, tensor<2x5xi64>) -> tensor<2x5x16xf32>
  %head = nn.transpose %wte permutation = [1, 0] {pp.node = "head_weight"} : (tensor<512x16xf32>) -> tensor<16x512xf32>
  %h0 = nn.matmul %e, %w0 {pp.node = "layer0"} : (tensor<2x5x16xf32>, tensor<16x16xf32>) -> tensor<2x5x16xf32>
  %a0 = nn.tanh %h0 {pp.node = "act0"} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  %h1 = nn.matmul %a0, %w1 {pp.node = "layer1"} : (tensor<2x5x16xf32>, tensor<16x16xf32>) -> tensor<2x5x16xf32>
  %a1 = nn.tanh %h1 {pp.node = "act1"} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  %h2 = nn.matmul %a1, %w2 {pp.node = "layer2"} : (tensor<2x5x16xf32>, tensor<16x16xf32>) -> tensor<2x5x16xf32>
  %a2 = nn.tanh %h2 {pp.node = "act2"} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  %h3 = nn.matmul %a2, %w3 {pp.node = "layer3"} : (tensor<2x5x16xf32>, tensor<16x16xf32>) -> tensor<2x5x16xf32>
  %a3 = nn.tanh %h3 {pp.node = "act3"} : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  %l = nn.matmul %a3, %head {pp.node = "lm_head"} : (tensor<2x5x16xf32>, tensor<16x512xf32>) -> tensor<2x5x512xf32>
  return %l : tensor<2x5x512xf32>
}

// A masked-LM-style head: a projection, then logits with a bias added
// ([batch, sequence, vocabulary]) for a rank-3 cross-entropy.
func.func @main(%x: tensor<1x4x8xf32> {pp.name = "x", pp.role = "input"},
                %wp: tensor<8x8xf32> {pp.name = "wp", pp.role = "parameter"},
                %w: tensor<6x8xf32> {pp.name = "w", pp.role = "parameter"},
                %b: tensor<6xf32> {pp.name = "b", pp.role = "parameter"})
    -> (tensor<1x4x6xf32> {pp.name = "logits"}) {
  %h = nn.matmul %x, %wp transpose_rhs {pp.node = "proj"} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %a = nn.tanh %h {pp.node = "proj"} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %z = nn.matmul %a, %w transpose_rhs {pp.node = "decoder"} : (tensor<1x4x8xf32>, tensor<6x8xf32>) -> tensor<1x4x6xf32>
  %logits = nn.add %z, %b {pp.node = "decoder"} : (tensor<1x4x6xf32>, tensor<6xf32>) -> tensor<1x4x6xf32>
  return %logits : tensor<1x4x6xf32>
}

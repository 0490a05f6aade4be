// A tied embedding whose LM head reads the table scaled and transposed by a
// node of its own next to the embedding, as an exporter may write it, for
// pp-localize-parameter-derived.mlir.
func.func @main(%ids: tensor<2x3xi64> {pp.name = "ids", pp.role = "input"},
                %wte: tensor<7x4xf32> {pp.name = "wte", pp.role = "parameter"},
                %w: tensor<4x4xf32> {pp.name = "layer.weight", pp.role = "parameter"},
                %labels: tensor<2x3xi64> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %e = nn.gather %wte, %ids axis = 0 {pp.node = "embed"} : (tensor<7x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %scale = arith.constant {pp.node = "head_weight"} dense<0.5> : tensor<f32>
  %scaled = nn.mul %wte, %scale {pp.node = "head_weight"} : (tensor<7x4xf32>, tensor<f32>) -> tensor<7x4xf32>
  %head = nn.transpose %scaled permutation = [1, 0] {pp.node = "head_weight"} : (tensor<7x4xf32>) -> tensor<4x7xf32>
  %h = nn.matmul %e, %w {pp.node = "layer"} : (tensor<2x3x4xf32>, tensor<4x4xf32>) -> tensor<2x3x4xf32>
  %a = nn.tanh %h {pp.node = "act"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %l = nn.matmul %a, %head {pp.node = "lm_head"} : (tensor<2x3x4xf32>, tensor<4x7xf32>) -> tensor<2x3x7xf32>
  %loss = nn.cross_entropy %l, %labels reduction<sum> {pp.node = "loss"} : (tensor<2x3x7xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

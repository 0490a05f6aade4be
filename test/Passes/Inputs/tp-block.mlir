// A one-block GPT with a cross-entropy loss attached (the form pp-autodiff
// takes): token embedding, a fused QKV projection split into q, k and v
// with 2 heads, a residual MLP and an LM head over a vocabulary of 16.
func.func @main(%tokens: tensor<2x4xi64> {pp.name = "tokens", pp.role = "input"},
                %tok: tensor<16x8xf32> {pp.name = "tok.weight", pp.role = "parameter"},
                %g: tensor<8xf32> {pp.name = "ln.weight", pp.role = "parameter"},
                %wqkv: tensor<24x8xf32> {pp.name = "qkv.weight", pp.role = "parameter"},
                %bqkv: tensor<24xf32> {pp.name = "qkv.bias", pp.role = "parameter"},
                %wo: tensor<8x8xf32> {pp.name = "proj.weight", pp.role = "parameter"},
                %bo: tensor<8xf32> {pp.name = "proj.bias", pp.role = "parameter"},
                %w1: tensor<16x8xf32> {pp.name = "fc.weight", pp.role = "parameter"},
                %b1: tensor<16xf32> {pp.name = "fc.bias", pp.role = "parameter"},
                %w2: tensor<8x16xf32> {pp.name = "out.weight", pp.role = "parameter"},
                %head: tensor<16x8xf32> {pp.name = "lm_head.weight", pp.role = "parameter"},
                %labels: tensor<2x4xi64> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {classes = 16 : i64, ignore_index = -100 : i64, kind = "cross_entropy", output = "logits"}} {
  %x = nn.gather %tok, %tokens axis = 0 {pp.node = "embed"} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %n = nn.layer_norm %x, %g axis = 2 epsilon = 1.0e-05 {pp.node = "ln"} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %qkv0 = nn.matmul %n, %wqkv transpose_rhs {pp.node = "qkv"} : (tensor<2x4x8xf32>, tensor<24x8xf32>) -> tensor<2x4x24xf32>
  %qkv = nn.add %qkv0, %bqkv {pp.node = "qkv"} : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
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
  %o0 = nn.matmul %merged, %wo transpose_rhs {pp.node = "proj"} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %o = nn.add %o0, %bo {pp.node = "proj"} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = nn.add %x, %o {pp.node = "residual"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h0 = nn.matmul %r, %w1 transpose_rhs {pp.node = "fc"} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %h1 = nn.add %h0, %b1 {pp.node = "fc"} : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %h = nn.gelu %h1 {pp.node = "gelu"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %m = nn.matmul %h, %w2 transpose_rhs {pp.node = "out"} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
  %y = nn.add %r, %m {pp.node = "residual_2"} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = nn.matmul %y, %head transpose_rhs {pp.node = "lm_head"} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = nn.cross_entropy %logits, %labels reduction<sum> {pp.node = "loss"} : (tensor<2x4x16xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

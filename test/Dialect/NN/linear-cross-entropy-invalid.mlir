// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @depth_mismatch(%h: tensor<2x8x16xf32>, %w: tensor<12x40xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear_cross_entropy' op hidden 'tensor<2x8x16xf32>' and weight 'tensor<12x40xf32>' must share the depth D (the weight's first dimension)}}
  %0 = nn.linear_cross_entropy %h, %w, %y reduction<sum> chunk_rows = 8 : (tensor<2x8x16xf32>, tensor<12x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @transposed_depth(%h: tensor<2x8x16xf32>, %w: tensor<16x40xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear_cross_entropy' op hidden 'tensor<2x8x16xf32>' and weight 'tensor<16x40xf32>' must share the depth D (the weight's second dimension)}}
  %0 = nn.linear_cross_entropy %h, %w, %y reduction<sum> chunk_rows = 8 transpose_weight : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @weight_rank(%h: tensor<2x8x16xf32>, %w: tensor<2x16x40xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear_cross_entropy' op expects hidden [..., D] and weight [D, V], got 'tensor<2x8x16xf32>' and 'tensor<2x16x40xf32>'}}
  %0 = nn.linear_cross_entropy %h, %w, %y reduction<sum> chunk_rows = 8 : (tensor<2x8x16xf32>, tensor<2x16x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @labels_shape(%h: tensor<2x8x16xf32>, %w: tensor<16x40xf32>, %y: tensor<2x7xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear_cross_entropy' op labels shape [2, 7] must equal the logits shape without the class dimension [2, 8]}}
  %0 = nn.linear_cross_entropy %h, %w, %y reduction<sum> chunk_rows = 8 : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x7xi64>) -> tensor<f32>
  return
}

// -----

func.func @chunk_rows(%h: tensor<2x8x16xf32>, %w: tensor<16x40xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear_cross_entropy' op chunk_rows must be positive, got 0}}
  %0 = nn.linear_cross_entropy %h, %w, %y reduction<sum> chunk_rows = 0 : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @bf16_hidden(%h: tensor<2x8x16xbf16>, %w: tensor<16x40xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+1 {{'nn.linear_cross_entropy' op operand #0 must be ranked tensor of 32-bit float values}}
  %0 = nn.linear_cross_entropy %h, %w, %y reduction<sum> chunk_rows = 8 : (tensor<2x8x16xbf16>, tensor<16x40xf32>, tensor<2x8xi64>) -> tensor<f32>
  return
}

// -----

func.func @grad_shape(%g: tensor<2x8xf32>, %h: tensor<2x8x16xf32>, %w: tensor<16x40xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear_cross_entropy_grad' op grad shape [2, 8] must equal the loss shape []}}
  %0:2 = nn.linear_cross_entropy_grad %g, %h, %w, %y reduction<sum> chunk_rows = 8 : (tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>) -> (tensor<2x8x16xf32>, tensor<16x40xf32>)
  return
}

// -----

func.func @bias_length(%h: tensor<2x8x16xf32>, %w: tensor<16x40xf32>, %y: tensor<2x8xi64>, %b: tensor<39xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear_cross_entropy' op bias 'tensor<39xf32>' must be [V] with V = 40, the classes of weight 'tensor<16x40xf32>'}}
  %0 = nn.linear_cross_entropy %h, %w, %y bias %b reduction<sum> chunk_rows = 8 : (tensor<2x8x16xf32>, tensor<16x40xf32>, tensor<2x8xi64>, tensor<39xf32>) -> tensor<f32>
  return
}

// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @depth_mismatch(%q: tensor<2x8x16xf32>, %kt: tensor<2x12x6xf32>, %v: tensor<2x6x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.attention' op query 'tensor<2x8x16xf32>' has depth 16 but key 'tensor<2x12x6xf32>' has 12 (key is [..., D, Sk])}}
  %0 = nn.attention %q, %kt, %v scale = 1.0 fill = 0.0 : (tensor<2x8x16xf32>, tensor<2x12x6xf32>, tensor<2x6x5xf32>) -> tensor<2x8x5xf32>
  return
}

// -----

func.func @transposed_key_depth(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x6xf32>, %v: tensor<2x6x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.attention' op query 'tensor<2x8x16xf32>' has depth 16 but key 'tensor<2x16x6xf32>' has 6 (key is [..., Sk, D] with transpose_key)}}
  %0 = nn.attention %q, %kt, %v scale = 1.0 fill = 0.0 transpose_key : (tensor<2x8x16xf32>, tensor<2x16x6xf32>, tensor<2x6x5xf32>) -> tensor<2x8x5xf32>
  return
}

// -----

func.func @value_positions(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x6xf32>, %v: tensor<2x7x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.attention' op key 'tensor<2x16x6xf32>' has 6 positions but value 'tensor<2x7x5xf32>' has 7}}
  %0 = nn.attention %q, %kt, %v scale = 1.0 fill = 0.0 : (tensor<2x8x16xf32>, tensor<2x16x6xf32>, tensor<2x7x5xf32>) -> tensor<2x8x5xf32>
  return
}

// -----

func.func @broadcast_heads(%q: tensor<2x8x16xf32>, %kt: tensor<1x16x6xf32>, %v: tensor<2x6x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.attention' op query, key and value must share their leading (batch and head) dimensions, got 'tensor<2x8x16xf32>', 'tensor<1x16x6xf32>' and 'tensor<2x6x5xf32>'}}
  %0 = nn.attention %q, %kt, %v scale = 1.0 fill = 0.0 : (tensor<2x8x16xf32>, tensor<1x16x6xf32>, tensor<2x6x5xf32>) -> tensor<2x8x5xf32>
  return
}

// -----

func.func @bias_too_big(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x6xf32>, %v: tensor<2x6x5xf32>, %b: tensor<3x2x8x6xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.attention' op bias 'tensor<3x2x8x6xf32>' does not broadcast to the scores' shape [2, 8, 6]}}
  %0 = nn.attention %q, %kt, %v bias %b scale = 1.0 fill = 0.0 : (tensor<2x8x16xf32>, tensor<2x16x6xf32>, tensor<2x6x5xf32>, tensor<3x2x8x6xf32>) -> tensor<2x8x5xf32>
  return
}

// -----

func.func @mask_shape(%q: tensor<2x8x16xf32>, %kt: tensor<2x16x6xf32>, %v: tensor<2x6x5xf32>, %m: tensor<8x4xi1>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.attention' op mask 'tensor<8x4xi1>' does not broadcast to the scores' shape [2, 8, 6]}}
  %0 = nn.attention %q, %kt, %v mask %m scale = 1.0 fill = 0.0 : (tensor<2x8x16xf32>, tensor<2x16x6xf32>, tensor<2x6x5xf32>, tensor<8x4xi1>) -> tensor<2x8x5xf32>
  return
}

// -----

func.func @half_precision(%q: tensor<2x8x16xbf16>, %kt: tensor<2x16x6xbf16>, %v: tensor<2x6x5xbf16>) {
  // expected-error @+1 {{'nn.attention' op operand #0 must be ranked tensor of 32-bit float values}}
  %0 = nn.attention %q, %kt, %v scale = 1.0 fill = 0.0 : (tensor<2x8x16xbf16>, tensor<2x16x6xbf16>, tensor<2x6x5xbf16>) -> tensor<2x8x5xbf16>
  return
}

// -----

func.func @grad_type(%do: tensor<2x8x6xf32>, %q: tensor<2x8x16xf32>, %kt: tensor<2x16x6xf32>, %v: tensor<2x6x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.attention_grad' op grad 'tensor<2x8x6xf32>' must have the attention's result type 'tensor<2x8x5xf32>'}}
  %0:3 = nn.attention_grad %do, %q, %kt, %v scale = 1.0 fill = 0.0 : (tensor<2x8x6xf32>, tensor<2x8x16xf32>, tensor<2x16x6xf32>, tensor<2x6x5xf32>) -> (tensor<2x8x16xf32>, tensor<2x16x6xf32>, tensor<2x6x5xf32>)
  return
}

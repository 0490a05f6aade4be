// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @rank_one(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.matmul' op operands must have rank 2 or more, got 'tensor<8xf32>' and 'tensor<8x4xf32>'}}
  %0 = nn.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @contracting_mismatch(%a: tensor<4x8xf32>, %b: tensor<7x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.matmul' op contracting dimensions differ: lhs 'tensor<4x8xf32>' has K = 8, rhs 'tensor<7x4xf32>' has K = 7}}
  %0 = nn.matmul %a, %b : (tensor<4x8xf32>, tensor<7x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @batch_mismatch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.matmul' op batch dimensions [2] and [3] are not broadcast-compatible}}
  %0 = nn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear' op expects input [..., in] and weight [out, in], got 'tensor<4x8xf32>' and 'tensor<8xf32>'}}
  %0 = nn.linear %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_features(%x: tensor<4x8xf32>, %w: tensor<16x7xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear' op input features 8 differ from weight input features 7 (weight is [out, in])}}
  %0 = nn.linear %x, %w : (tensor<4x8xf32>, tensor<16x7xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.linear' op bias 'tensor<8xf32>' must be [16], the weight's output features}}
  %0 = nn.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return
}

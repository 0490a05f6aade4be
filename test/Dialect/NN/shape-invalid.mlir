// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @not_a_permutation(%x: tensor<2x4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.transpose' op permutation [0, 1, 1] is not a permutation of the dimensions of 'tensor<2x4x8xf32>'}}
  %0 = nn.transpose %x permutation = [0, 1, 1] : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reshape' op shape [3, 3] holds 9 elements but the input 'tensor<2x4xf32>' holds 8}}
  %0 = nn.reshape %x shape = [3, 3] : (tensor<2x4xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @reshape_negative(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reshape' op shape [-1, 4] must have non-negative static dimensions}}
  %0 = nn.reshape %x shape = [-1, 4] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_to_smaller(%x: tensor<3x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.broadcast_to' op input shape [3, 8] does not broadcast to [4, 8]}}
  %0 = nn.broadcast_to %x shape = [4, 8] : (tensor<3x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @sum_to_unrelated(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.sum_to' op shape [3] does not broadcast to the input shape [4, 8]}}
  %0 = nn.sum_to %x shape = [3] : (tensor<4x8xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @slice_entries(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.slice' op starts, limits and strides need one entry per dimension of [4, 8], got 1, 2 and 2}}
  %0 = nn.slice %x starts = [0] limits = [4, 8] strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.slice' op slice [2, 9) of dimension 1 is not within [0, 8] with start <= limit}}
  %0 = nn.slice %x starts = [0, 2] limits = [4, 9] strides = [1, 1] : (tensor<4x8xf32>) -> tensor<4x7xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.slice' op stride 0 of dimension 0 must be at least 1}}
  %0 = nn.slice %x starts = [0, 0] limits = [4, 8] strides = [0, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<4x3xf32>, %b: tensor<5x5xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.concat' op input 1 'tensor<5x5xf32>' does not match input 0 'tensor<4x3xf32>' outside the concatenated axis 1}}
  %0 = nn.concat %a, %b axis = 1 : (tensor<4x3xf32>, tensor<5x5xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_nothing() {
  // expected-error @+1 {{'nn.concat' op expected 1 or more operands, but found 0}}
  %0 = nn.concat axis = 0 : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<4x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.concat' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.concat %a axis = 2 : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.split' op sizes [3, 4] add up to 7 but dimension 1 of 'tensor<4x8xf32>' is 8}}
  %0:2 = nn.split %x axis = 1 sizes = [3, 4] : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x4xf32>)
  return
}

// -----

func.func @split_sizes(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.split' op sizes [9, -1] must be a non-empty list of non-negative sizes}}
  %0:2 = nn.split %x axis = 1 sizes = [9, -1] : (tensor<4x8xf32>) -> (tensor<4x9xf32>, tensor<4x1xf32>)
  return
}

// -----

func.func @gather_axis(%t: tensor<100x16xf32>, %ids: tensor<7xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.gather' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.gather %t, %ids axis = 2 : (tensor<100x16xf32>, tensor<7xi64>) -> tensor<7x16xf32>
  return
}

// -----

func.func @gather_float_indices(%t: tensor<100x16xf32>, %ids: tensor<7xf32>) {
  // expected-error @+1 {{'nn.gather' op operand #1 must be ranked tensor of signless integer values}}
  %0 = nn.gather %t, %ids axis = 0 : (tensor<100x16xf32>, tensor<7xf32>) -> tensor<7x16xf32>
  return
}

// -----

func.func @concat_element_types(%a: tensor<4x3xf32>, %b: tensor<4x3xi64>) {
  // expected-error @+1 {{'nn.concat' op requires the same element type for all operands and results}}
  %0 = nn.concat %a, %b axis = 1 : (tensor<4x3xf32>, tensor<4x3xi64>) -> tensor<4x6xf32>
  return
}

// -----

func.func @transpose_rank(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.transpose' op permutation [1, 0, 2] is not a permutation of the dimensions of 'tensor<2x4xf32>'}}
  %0 = nn.transpose %x permutation = [1, 0, 2] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  return
}

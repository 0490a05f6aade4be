// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @activation_grad_shapes(%dy: tensor<4x8xf32>, %x: tensor<8xf32>) {
  // expected-error @+1 {{'nn.relu_grad' op requires the same type for all operands and results}}
  %0 = nn.relu_grad %dy, %x : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_grad_axis(%dy: tensor<4x8xf32>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.softmax_grad' op axis -3 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.softmax_grad %dy, %y axis = -3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_grad_types(%dy: tensor<4x7xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.layer_norm_grad' op grad 'tensor<4x7xf32>' must have the input type 'tensor<4x8xf32>'}}
  %0:3 = nn.layer_norm_grad %dy, %x, %g axis = 1 epsilon = 1.0e-05 : (tensor<4x7xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_weight(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.layer_norm_grad' op weight shape [4] must equal the normalized shape [8]}}
  %0:3 = nn.layer_norm_grad %dy, %x, %g axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @pow_grad_operand(%dy: tensor<4x8xf32>, %a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.pow_grad' op operand 2 must be 0 (lhs) or 1 (rhs)}}
  %0 = nn.pow_grad %dy, %a, %a operand = 2 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @maximum_grad_shapes(%dy: tensor<4x8xf32>, %a: tensor<4x1xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.maximum_grad' op lhs [4, 1] and rhs [4] must broadcast to the grad shape [4, 8]}}
  %0 = nn.maximum_grad %dy, %a, %b operand = 0 : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_sum_grad_shape(%dy: tensor<8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_sum_grad' op grad shape [8] must be [4, 8] reduced over [1]: [4] or, with kept dimensions, [4, 1]}}
  %0 = nn.reduce_sum_grad %dy axes = [1] input_shape = [4, 8] : (tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_sum_grad_axes(%dy: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_sum_grad' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.reduce_sum_grad %dy axes = [2] input_shape = [4, 8] : (tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_sum_grad_input_shape(%dy: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_sum_grad' op input_shape [4, -8] must have non-negative static dimensions}}
  %0 = nn.reduce_sum_grad %dy axes = [1] input_shape = [4, -8] : (tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_max_grad_result(%dy: tensor<4xf32>, %x: tensor<4x8xf32>, %y: tensor<4x1xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_max_grad' op grad shape [4] must equal the result shape [4, 1]}}
  %0 = nn.reduce_max_grad %dy, %x, %y axes = [1] : (tensor<4xf32>, tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_max_grad_axes(%dy: tensor<4xf32>, %x: tensor<4x8xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_max_grad' op result shape [4] must be [4, 8] reduced over [0]: [8] or, with kept dimensions, [1, 8]}}
  %0 = nn.reduce_max_grad %dy, %x, %y axes = [0] : (tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_grad_shape(%dy: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.slice_grad' op grad shape [4, 4] must equal the slice shape [4, 3]}}
  %0 = nn.slice_grad %dy input_shape = [4, 8] starts = [0, 2] limits = [4, 8] strides = [1, 2] : (tensor<4x4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_grad_input_shape(%dy: tensor<4x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.slice_grad' op input_shape [4, -8] must have non-negative static dimensions}}
  %0 = nn.slice_grad %dy input_shape = [4, -8] starts = [0, 2] limits = [4, 8] strides = [1, 2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gather_grad_shape(%dy: tensor<2x7x8xf32>, %ids: tensor<2x7xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.gather_grad' op grad shape [2, 7, 8] must equal the gather result shape [2, 7, 16]}}
  %0 = nn.gather_grad %dy, %ids axis = 0 data_shape = [100, 16] : (tensor<2x7x8xf32>, tensor<2x7xi64>) -> tensor<100x16xf32>
  return
}

// -----

func.func @gather_grad_data_shape(%dy: tensor<2x7x16xf32>, %ids: tensor<2x7xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.gather_grad' op data_shape [-1, 16] must have non-negative static dimensions}}
  %0 = nn.gather_grad %dy, %ids axis = 0 data_shape = [-1, 16] : (tensor<2x7x16xf32>, tensor<2x7xi64>) -> tensor<100x16xf32>
  return
}

// -----

func.func @gather_grad_axis(%dy: tensor<2x7x16xf32>, %ids: tensor<2x7xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.gather_grad' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.gather_grad %dy, %ids axis = 2 data_shape = [100, 16] : (tensor<2x7x16xf32>, tensor<2x7xi64>) -> tensor<100x16xf32>
  return
}

// -----

func.func @cross_entropy_grad_shape(%g: tensor<8xf32>, %logits: tensor<8x10xf32>, %labels: tensor<8xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.cross_entropy_grad' op grad shape [8] must equal the loss shape []}}
  %0 = nn.cross_entropy_grad %g, %logits, %labels reduction<sum> : (tensor<8xf32>, tensor<8x10xf32>, tensor<8xi64>) -> tensor<8x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_labels(%g: tensor<f32>, %logits: tensor<8x10xf32>, %labels: tensor<10xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.cross_entropy_grad' op labels shape [10] must equal the logits shape without the class dimension [8]}}
  %0 = nn.cross_entropy_grad %g, %logits, %labels reduction<sum> : (tensor<f32>, tensor<8x10xf32>, tensor<10xi64>) -> tensor<8x10xf32>
  return
}

// -----

func.func @mse_grad_types(%g: tensor<f32>, %y: tensor<8x4xf32>, %t: tensor<8x4xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.mse_loss_grad' op input 'tensor<8x4xf32>' and target 'tensor<8x4xf16>' must have the same type}}
  %0 = nn.mse_loss_grad %g, %y, %t reduction<sum> : (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf16>) -> tensor<8x4xf32>
  return
}

// -----

func.func @mse_grad_shape(%g: tensor<f32>, %y: tensor<8x4xf32>, %t: tensor<8x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.mse_loss_grad' op grad shape [] must equal the loss shape [8, 4]}}
  %0 = nn.mse_loss_grad %g, %y, %t reduction<none> : (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

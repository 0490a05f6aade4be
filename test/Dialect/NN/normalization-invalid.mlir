// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @softmax_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.softmax' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.softmax %x axis = 2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'nn.log_softmax' op requires the same type for all operands and results}}
  %0 = nn.log_softmax %x axis = 1 : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.layer_norm' op axis 2 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.layer_norm %x axis = 2 epsilon = 1.0e-05 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.layer_norm' op weight shape [4] must equal the normalized shape [8]}}
  %0 = nn.layer_norm %x, %g axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.layer_norm' op bias shape [2] must equal the normalized shape [8]}}
  %0 = nn.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<2xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_bias_without_weight(%x: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.layer_norm' op a bias needs a weight}}
  %0 = "nn.layer_norm"(%x, %b) <{axis = 1 : i64, epsilon = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.layer_norm' op epsilon -1.000000e+00 must not be negative}}
  %0 = nn.layer_norm %x axis = 1 epsilon = -1.0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @axis_range(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_sum' op axis -3 is out of range for rank 2 (expected -2 <= axis < 2)}}
  %0 = nn.reduce_sum %x axes = [-3] : (tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @axis_twice(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_mean' op axes [1, -1] name dimension 1 twice}}
  %0 = nn.reduce_mean %x axes = [1, -1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @keep_dims_result(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.reduce_max' op inferred type(s) 'tensor<4x1xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  %0 = nn.reduce_max %x axes = [1] keep_dims : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

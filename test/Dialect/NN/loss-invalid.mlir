// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @labels_shape(%logits: tensor<8x10xf32>, %labels: tensor<7xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.cross_entropy' op labels shape [7] must equal the logits shape without the class dimension [8]}}
  %0 = nn.cross_entropy %logits, %labels reduction<sum> : (tensor<8x10xf32>, tensor<7xi64>) -> tensor<f32>
  return
}

// -----

func.func @scalar_logits(%logits: tensor<f32>, %labels: tensor<i64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.cross_entropy' op logits must have a class dimension, got 'tensor<f32>'}}
  %0 = nn.cross_entropy %logits, %labels reduction<sum> : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @float_labels(%logits: tensor<8x10xf32>, %labels: tensor<8xf32>) {
  // expected-error @+1 {{'nn.cross_entropy' op operand #1 must be ranked tensor of signless integer values}}
  %0 = nn.cross_entropy %logits, %labels reduction<sum> : (tensor<8x10xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @reduced_shape(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.cross_entropy' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  %0 = nn.cross_entropy %logits, %labels reduction<none> : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @mse_shapes(%y: tensor<8x4xf32>, %t: tensor<8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.mse_loss' op input 'tensor<8x4xf32>' and target 'tensor<8xf32>' must have the same shape}}
  %0 = nn.mse_loss %y, %t reduction<mean> : (tensor<8x4xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @unknown_reduction(%y: tensor<8xf32>) {
  // expected-error @+2 {{expected ::pp::nn::LossReduction to be one of: mean, sum, none}}
  // expected-error @+1 {{failed to parse NN_LossReductionAttr parameter 'value'}}
  %0 = nn.mse_loss %y, %y reduction<max> : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

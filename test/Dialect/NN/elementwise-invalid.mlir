// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @not_broadcastable(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.add' op operand shapes [4, 8] and [3] are not broadcast-compatible}}
  %0 = nn.add %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @wrong_result_shape(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.mul' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  %0 = nn.mul %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @mixed_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'nn.sub' op requires the same element type for all operands and results}}
  %0 = nn.sub %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @pow_on_integers(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.pow' op operand #0 must be ranked tensor of floating-point values}}
  %0 = nn.pow %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @unary_type_change(%a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.exp' op requires the same type for all operands and results}}
  %0 = nn.exp %a : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @unary_on_integers(%a: tensor<4xi32>) {
  // expected-error @+1 {{'nn.relu' op operand #0 must be ranked tensor of floating-point values}}
  %0 = nn.relu %a : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @where_value_types(%m: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.where' op on_true element type 'f32' differs from on_false element type 'f16'}}
  %0 = nn.where %m, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @where_shapes(%m: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'nn.where' op operand shapes [3], [4] and [4] are not broadcast-compatible}}
  %0 = nn.where %m, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition_type(%m: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'nn.where' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = nn.where %m, %a, %a : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_changes_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.cast' op result shape [2, 2] differs from the input shape [4]; nn.cast changes the element type only}}
  %0 = nn.cast %x : (tensor<4xf32>) -> tensor<2x2xi64>
  return
}

// -----

func.func @cast_to_disagrees(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.cast' op attribute 'to' (i32) differs from the result element type 'i64'; the parser and the builders derive it from the result type}}
  %0 = "nn.cast"(%x) <{to = 2 : i32}> : (tensor<4xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @cast_to_unknown_dtype(%x: tensor<4xf32>) {
  // expected-error @+1 {{invalid properties {to = 9 : i32} for op nn.cast: Invalid attribute `to` in property conversion: 9 : i32}}
  %0 = "nn.cast"(%x) <{to = 9 : i32}> : (tensor<4xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @cast_to_i8(%x: tensor<4xf32>) {
  // expected-error @+1 {{nn.cast cannot convert to 'tensor<4xi8>'; the element type must be f32, f64, f16, bf16, i64, i32 or i1}}
  %0 = nn.cast %x : (tensor<4xf32>) -> tensor<4xi8>
  return
}

// -----

func.func @cast_two_operands(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected the type of one operand and one result, as (tensor<4xf32>) -> tensor<4xi64>, got '(tensor<4xf32>, tensor<4xf32>) -> tensor<4xi64>'}}
  %0 = nn.cast %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @dropout_ratio_one(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.dropout' op ratio 1.000000e+00 is outside [0, 1); a dropout ratio is the probability of zeroing an element}}
  %0 = nn.dropout %x ratio = 1.0 key = 3 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @trilu_of_vector(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.trilu' op input has rank 1; nn.trilu takes the triangle of the two trailing dimensions, so the input needs rank 2 or more}}
  %0 = nn.trilu %x diagonal = 0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

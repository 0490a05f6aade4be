// RUN: pp-opt %s -split-input-file -verify-diagnostics

func.func @no_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.fusion' op has no results; a fusion computes at least one tensor}}
  nn.fusion (%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
    nn.yield
  }
  return
}

// -----

func.func @results_differ(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.fusion' op result 1 has type 'tensor<2x4xf32>', whose shape differs from result 0's 'tensor<4xf32>'; all results of a fusion have one shape}}
  %0:2 = nn.fusion (%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %n = nn.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    nn.yield %n, %n : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

func.func @dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'nn.fusion' op result 0 has the dynamic type 'tensor<?xf32>'; a fusion loops over a static shape}}
  %0 = nn.fusion (%x) : (tensor<?xf32>) -> tensor<?xf32> {
  ^bb0(%a: tensor<?xf32>):
    %n = nn.neg %a : (tensor<?xf32>) -> tensor<?xf32>
    nn.yield %n : tensor<?xf32>
  }
  return
}

// -----

func.func @input_does_not_broadcast(%x: tensor<4xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{'nn.fusion' op input 1 of type 'tensor<3xf32>' does not broadcast to the fusion's shape (that of 'tensor<4xf32>')}}
  %0 = nn.fusion (%x, %y) : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<3xf32>):
    %n = nn.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    nn.yield %n : tensor<4xf32>
  }
  return
}

// -----

func.func @arguments_differ(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.fusion' op body takes ('tensor<1xf32>') but the inputs are ('tensor<4xf32>'); the body has one argument per input, of its type}}
  %0 = nn.fusion (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<1xf32>):
    %n = nn.add %a, %a : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    %m = nn.sub %n, %n : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
    nn.yield %m : tensor<1xf32>
  }
  return
}

// -----

func.func @yield_differs(%x: tensor<4xf32>) {
  %0 = nn.fusion (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = nn.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'nn.yield' op yields ('tensor<4xf32>', 'tensor<4xf32>') but the fusion returns ('tensor<4xf32>')}}
    nn.yield %n, %n : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

func.func @not_elementwise(%x: tensor<4x4xf32>) {
  %0 = nn.fusion (%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{'nn.softmax' op is not elementwise (no NN_Elementwise trait); an nn.fusion holds only elementwise ops}}
    %s = nn.softmax %a axis = 1 : (tensor<4x4xf32>) -> tensor<4x4xf32>
    nn.yield %s : tensor<4x4xf32>
  }
  return
}

// -----

func.func @other_shape_inside(%x: tensor<4x4xf32>, %y: tensor<4xf32>) {
  %0 = nn.fusion (%x, %y) : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4xf32>):
    // expected-error @+1 {{'nn.neg' op computes 'tensor<4xf32>' inside a fusion of shape 'tensor<4x4xf32>'; every op of a fusion computes the fusion's shape}}
    %n = nn.neg %b : (tensor<4xf32>) -> tensor<4xf32>
    %s = nn.add %a, %n : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    nn.yield %s : tensor<4x4xf32>
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'nn.yield' op expects parent op 'nn.fusion'}}
  nn.yield %x : tensor<4xf32>
}

// -----

func.func @captures(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = nn.fusion (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %s = nn.add %a, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    nn.yield %s : tensor<4xf32>
  }
  return
}

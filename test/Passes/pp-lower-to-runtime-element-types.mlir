// The kernels' element types come from each op's traits (NNInterfaces.td):
// a float type (f32, bf16, f16) by default, any for data movement, a float
// type with integer indices, and
// every conversion nn.cast takes. An op the kernels do not compute on its
// element types is refused when lowering, naming its stage function and its
// node, not when it runs.
// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-lower-to-runtime

func.func @stage0_forward(%x: tensor<3xi32>, %y: tensor<3xi32>) -> tensor<3xi32> attributes {pp.stage = 0 : i64} {
  // expected-error @+1 {{stage0_forward, node 'Max_0': nn.maximum on tensor<3xi32>, tensor<3xi32>: pp's kernels compute it for f32, bf16 and f16 only}}
  %m = nn.maximum %x, %y {pp.node = "Max_0"} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %m : tensor<3xi32>
}

// -----

func.func @stage0_forward(%x: tensor<2x3xf64>) -> tensor<2x3xf64> attributes {pp.stage = 0 : i64} {
  // expected-error @+1 {{nn.softmax on tensor<2x3xf64>: pp's kernels compute it for f32, bf16 and f16 only}}
  %s = nn.softmax %x axis = 1 : (tensor<2x3xf64>) -> tensor<2x3xf64>
  return %s : tensor<2x3xf64>
}

// -----

func.func @stage0_forward(%x: tensor<2x3xf64>, %y: tensor<2xi64>) -> tensor<f64> attributes {pp.stage = 0 : i64} {
  // expected-error @+1 {{node 'loss': nn.cross_entropy on tensor<2x3xf64>, tensor<2xi64>: pp's kernels compute it for f32, bf16 and f16 only (with integer indices)}}
  %l = nn.cross_entropy %x, %y reduction<sum> {pp.node = "loss"} : (tensor<2x3xf64>, tensor<2xi64>) -> tensor<f64>
  return %l : tensor<f64>
}


// -----

// Data movement takes any element type; integer indices and labels stay
// integer; the cast kernels convert f64 to i32, and f32 to bf16 and f16.
func.func @stage0_forward(%t: tensor<6x3xf64>, %i: tensor<4xi64>, %x: tensor<2x3xf32>, %y: tensor<2xi32>, %b: tensor<2x3xi1>, %v: tensor<2x3xi64>) -> (tensor<3x4xf64>, tensor<f32>, tensor<3x4xi32>, tensor<2x3xi64>, tensor<2x3xf16>) attributes {pp.stage = 0 : i64} {
  %rows = nn.gather %t, %i axis = 0 : (tensor<6x3xf64>, tensor<4xi64>) -> tensor<4x3xf64>
  %cols = nn.transpose %rows permutation = [1, 0] : (tensor<4x3xf64>) -> tensor<3x4xf64>
  %l = nn.cross_entropy %x, %y reduction<sum> : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
  %c = nn.cast %cols : (tensor<3x4xf64>) -> tensor<3x4xi32>
  %w = nn.where %b, %v, %v : (tensor<2x3xi1>, tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %h = nn.cast %x : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %q = nn.cast %h : (tensor<2x3xbf16>) -> tensor<2x3xf16>
  return %cols, %l, %c, %w, %q : tensor<3x4xf64>, tensor<f32>, tensor<3x4xi32>, tensor<2x3xi64>, tensor<2x3xf16>
}

// -----

// The collective kernels compute float values (with integer indices).
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @stage0_forward(%x: tensor<4xi64>) -> tensor<4xi64> attributes {pp.stage = 0 : i64} {
  // expected-error @+1 {{pp.all_reduce on tensor<4xi64>: pp's collective kernels compute f32, bf16 and f16 values (with integer indices and labels) only}}
  %s = pp.all_reduce @pipeline %x over ["tp"] reduction<sum> : (tensor<4xi64>) -> tensor<4xi64>
  return %s : tensor<4xi64>
}

// -----

// The compute kernels take bf16 and f16 as they take f32: a matmul, a
// softmax and a loss over bf16, a layer norm over f16, a bf16 all-reduce.
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @stage0_forward(%a: tensor<2x3xbf16>, %b: tensor<3x3xbf16>, %y: tensor<2xi64>, %h: tensor<2x3xf16>) -> (tensor<bf16>, tensor<2x3xf16>, tensor<2x3xbf16>) attributes {pp.stage = 0 : i64} {
  %m = nn.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x3xbf16>) -> tensor<2x3xbf16>
  %s = nn.softmax %m axis = 1 : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %l = nn.cross_entropy %s, %y reduction<sum> : (tensor<2x3xbf16>, tensor<2xi64>) -> tensor<bf16>
  %n = nn.layer_norm %h axis = 1 epsilon = 1.0e-05 : (tensor<2x3xf16>) -> tensor<2x3xf16>
  %r = pp.all_reduce @pipeline %m over ["tp"] reduction<sum> : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %l, %n, %r : tensor<bf16>, tensor<2x3xf16>, tensor<2x3xbf16>
}

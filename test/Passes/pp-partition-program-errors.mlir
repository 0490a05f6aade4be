// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-partition="stages=2"

// expected-error @+1 {{the module already declares @pipeline without a pipeline axis; remove it or give it one of 2 ranks}}
pp.mesh @pipeline [#pp.axis<"dp" = 2, data_replicate>]
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32> {
  %a = nn.neg %x {pp.node = "a"} : (tensor<2xf32>) -> tensor<2xf32>
  %b = nn.exp %a {pp.node = "b"} : (tensor<2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// expected-error @+1 {{the module already declares @pipeline with a pipeline axis of 3 ranks, but the partition has 2; remove the mesh or partition onto 3 ranks (stages=3)}}
pp.mesh @pipeline [#pp.axis<"pp" = 3, pipeline>]
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32> {
  %a = nn.neg %x {pp.node = "a"} : (tensor<2xf32>) -> tensor<2xf32>
  %b = nn.exp %a {pp.node = "b"} : (tensor<2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// Node "a" is not contiguous: its second op uses node "b"'s value.
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32> {
  %a = nn.neg %x {pp.node = "a"} : (tensor<2xf32>) -> tensor<2xf32>
  %b = nn.exp %a {pp.node = "b"} : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{'nn.tanh' op uses the result of 'nn.exp' of node 'b' (stage 1, forward), which runs later in the pipeline than 'nn.tanh' of node 'a' (stage 0, forward); a node's ops must be contiguous in program order and forward ops may not use backward values}}
  %c = nn.tanh %b {pp.node = "a"} : (tensor<2xf32>) -> tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32> {
  %a = nn.neg %x {pp.node = "a"} : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{'tensor.generate' op has regions; pp handles a model as one flat block of ops}}
  %g = tensor.generate {
  ^bb0(%i: index):
    %v = tensor.extract %a[%i] : tensor<2xf32>
    tensor.yield %v : f32
  } {pp.node = "b"} : tensor<2xf32>
  %b = nn.exp %g {pp.node = "b"} : (tensor<2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// The parameter 'p' of node "a" (stage 0) gets its gradient from node "b"'s
// backward (stage 1), which does not hold it: nn.add hands its result's
// gradient on as its operand's.
// expected-error @+1 {{the gradient of the parameter 'p' is computed on stage 1, which does not hold it (holders: 0); place the node computing it with a user of the parameter (split-points)}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %p: tensor<2xf32> {pp.name = "p", pp.role = "parameter"},
                %s: tensor<2xf32> {pp.name = "s", pp.role = "loss_scale"})
    -> (tensor<2xf32>, tensor<2xf32> {pp.name = "p", pp.role = "gradient"}) {
  %a = nn.add %x, %p {pp.node = "a"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = nn.exp %a {pp.node = "b"} : (tensor<2xf32>) -> tensor<2xf32>
  %g = nn.mul %s, %b {pp.node = "b", pp.phase = #pp.phase<backward>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %b, %g : tensor<2xf32>, tensor<2xf32>
}

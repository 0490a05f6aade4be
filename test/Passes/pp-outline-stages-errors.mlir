// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-outline-stages

// expected-error @+1 {{the program is not partitioned; run pp-partition and pp-insert-send-recv first}}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 8, pipeline>]
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32>
    attributes {pp.stage_costs = [{}, {}]} {
  // expected-error @+1 {{'pp.stage' op names stage 5, but the program was partitioned into 2 stages (pp.stage_costs)}}
  %0 = pp.stage @pipeline stage 5 ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32>
    attributes {pp.stage_costs = [{}, {}]} {
  // expected-error @+1 {{'pp.transfer' op must carry results of one pp.stage op of stage 0; run pp-insert-send-recv to create transfers}}
  %t = pp.transfer @pipeline %x from 0 to 1 names ["x"] : tensor<2xf32>
  %0 = pp.stage @pipeline stage 1 ins(%t) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32>
    attributes {pp.stage_costs = [{}, {}]} {
  %0 = pp.stage @pipeline stage 1 phase<backward> ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  // expected-error @+1 {{the forward of stage 0 uses a value of phase backward, which does not run before it}}
  %t = pp.transfer @pipeline %0 from 1 to 0 names ["g"] : tensor<2xf32>
  %2 = pp.stage @pipeline stage 0 ins(%t) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %2 : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32>
    attributes {pp.stage_costs = [{}]} {
  // expected-error @+1 {{'arith.constant' op is outside every pp.stage; run pp-partition and pp-insert-send-recv first}}
  %c = arith.constant dense<1.0> : tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// A backward split on one stage but not on the other.
pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> (tensor<2xf32>, tensor<2xf32>)
    attributes {pp.stage_costs = [{}, {}]} {
  %0 = pp.stage @pipeline stage 1 phase<backward_weight> ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  // expected-error @+1 {{'pp.stage' op has phase backward, but the program's stage functions are forward, backward_input, backward_weight; split every backward stage op (pp-split-backward) or none}}
  %1 = pp.stage @pipeline stage 0 phase<backward> ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

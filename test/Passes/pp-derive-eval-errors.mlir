// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-derive-eval

// expected-error @+1 {{no outlined training program: run --pp-compile (or pp-attach-loss through pp-outline-stages) first}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// expected-error @+1 {{the program is forward-only (pp-mark-outputs): its forward functions already compute no saved values; derive eval functions of a training program (pp-attach-loss)}}
module attributes {pp.forward_only = {inputs = [], outputs = []}, pp.stage_costs = [{}]} {
}

// -----

// expected-error @+1 {{stage 1 has no forward function; run pp-outline-stages first}}
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}, {}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
  func.func @stage0_forward() attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64} {
    return
  }
}

// -----

module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
  func.func @stage0_forward() attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64} {
    return
  }
  // expected-error @+1 {{'func.func' op is already an eval function; run pp-derive-eval once}}
  func.func @stage0_eval() attributes {pp.phase = #pp.phase<eval>, pp.stage = 0 : i64} {
    return
  }
}

// -----

module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
  func.func @stage0_forward() attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64} {
    return
  }
  // expected-error @+1 {{'func.func' op is a second forward function of stage 0 after @stage0_forward}}
  func.func @stage0_again() attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64} {
    return
  }
}

// -----

module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
  // expected-error @+1 {{'func.func' op is on stage 1, but the program has 1 stages (pp.stage_costs)}}
  func.func @stage1_forward() attributes {pp.phase = #pp.phase<forward>, pp.stage = 1 : i64} {
    return
  }
}

// -----

module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
  func.func @stage0_forward() attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64} {
    return
  }
  // expected-error @+1 {{'func.func' op takes the name @stage0_eval that the eval function of stage 0 needs}}
  func.func private @stage0_eval()
}

// -----

// The message received from stage 0 is unused in stage 1's eval, but stage
// 0 sends no such message.
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}, {}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
  func.func @stage0_forward(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64} {
    pp.send @pipeline %x to 1 names ["other"] : tensor<2xf32>
    return
  }
  func.func @stage1_forward() -> (tensor<2xf32> {pp.name = "saved:h", pp.role = "saved"}) attributes {pp.phase = #pp.phase<forward>, pp.stage = 1 : i64} {
    // expected-error @+1 {{'pp.recv' op of stage 1 has no matching pp.send to it in the forward of stage 0; run pp-outline-stages to pair them}}
    %h = pp.recv @pipeline from 0 names ["h"] : tensor<2xf32>
    return %h : tensor<2xf32>
  }
}

// RUN: pp-opt %s -split-input-file -verify-diagnostics

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>]

func.func @stage_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.stage' op stage 2 is out of range: mesh @world has 2 pipeline stages}}
  %0 = pp.stage @world stage 2 ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @unknown_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.stage' op @nowhere does not name a pp.mesh}}
  %0 = pp.stage @nowhere stage 0 ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  return
}

// -----

pp.mesh @flat [#pp.axis<"dp" = 2, data_replicate>]

func.func @no_pipeline_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.stage' op refers to pipeline stages but mesh @flat has no pipeline axis}}
  %0 = pp.stage @flat stage 0 ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>]

func.func @argument_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.stage' op block argument types 'tensor<8xf32>' must match the input types 'tensor<4xf32>'}}
  %0 = pp.stage @world stage 0 ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<8xf32>):
    %c = arith.constant dense<0.0> : tensor<4xf32>
    pp.yield %c : tensor<4xf32>
  }
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>]

func.func @yield_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.stage' op yields 'tensor<4xf32>' but the stage returns 'tensor<8xf32>'}}
  %0 = pp.stage @world stage 0 ins(%x) : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>]

func.func @captures(%x: tensor<4xf32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = pp.stage @world stage 0 ins() : () -> tensor<4xf32> {
    // expected-error @+1 {{'nn.neg' op using value defined outside the region}}
    %y = nn.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    pp.yield %y : tensor<4xf32>
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.yield' op expects parent op 'pp.stage'}}
  pp.yield %x : tensor<4xf32>
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>]

func.func @missing_terminator(%x: tensor<4xf32>) {
  %0 = "pp.stage"(%x) <{mesh = @world, stage = 0 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{block with no terminator}}
    %b = "nn.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// With stage_ranks, stages number up to its size, not the axis size.
pp.mesh @world [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 1, 0, 1>}

func.func @virtual_stage_out_of_range(%x: tensor<4xf32>) {
  %ok = pp.stage @world stage 3 ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  // expected-error @+1 {{'pp.stage' op stage 4 is out of range: mesh @world has 4 pipeline stages}}
  %0 = pp.stage @world stage 4 ins(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  return
}

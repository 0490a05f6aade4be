// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-emit-package="dir=%t"
// RUN: not pp-opt %s --split-input-file --pp-emit-package 2>&1 | FileCheck %s --check-prefix=NODIR
// NODIR: error: pp-emit-package needs dir=DIRECTORY

// expected-error @+1 {{nothing to package: run --pp-compile (or pp-attach-loss or pp-mark-outputs through pp-outline-stages) first}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}, {}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
  func.func @stage0_forward(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    %c = arith.constant dense<1> : tensor<2xi8>
    // expected-error @+1 {{passes 'tensor<2xi8>' to or from the runtime, which takes ranked tensors of f32, f16, bf16, f64, i64, i32, i1}}
    pp.send @pipeline %c to 1 names ["c"] : tensor<2xi8>
    return
  }
  func.func @stage1_forward() attributes {pp.stage = 1 : i64, pp.phase = #pp.phase<forward>} {
    %0 = pp.recv @pipeline from 0 names ["c"] : tensor<2xi8>
    return
  }
}

// -----

// expected-error @+1 {{stage 1 has no forward function; run pp-outline-stages first}}
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}, {}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
  func.func @stage0_forward(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    return
  }
  func.func @stage1_backward(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) attributes {pp.stage = 1 : i64, pp.phase = #pp.phase<backward>} {
    return
  }
}

// -----

// expected-error @+1 {{parameter 'w' is sharded as #pp.sharding<[["tp"], ["dp"]]>; the runtime shards one dimension of a parameter over one tensor axis of the mesh @pipeline (a replicated parameter has no pp.sharding)}}
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"dp" = 2, data_replicate>, #pp.axis<"tp" = 2, tensor>]
  func.func @stage0_forward(%y: tensor<2xf32> {pp.name = "y", pp.role = "label"}, %w: tensor<2x2xf32> {pp.name = "w", pp.role = "parameter", pp.sharding = #pp.sharding<[["tp"], ["dp"]]>}) attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    return
  }
}

// -----

// expected-error @+1 {{parameter 'w': dimension 0 of tensor<6x2xf32> (size 6) does not split into 2 block(s) x 2 device(s)}}
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"tp" = 2, tensor>]
  func.func @stage0_forward(%y: tensor<2xf32> {pp.name = "y", pp.role = "label"}, %w: tensor<3x2xf32> {pp.name = "w", pp.role = "parameter", pp.sharding = #pp.sharding<[["tp"], []], blocks = [2, 1]>}) attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    return
  }
}

// -----

module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
  // expected-error @+1 {{argument 1 has the role 'weight', which the runtime does not know}}
  func.func @stage0_forward(%y: tensor<2xf32> {pp.name = "y", pp.role = "label"}, %w: tensor<2xf32> {pp.name = "w", pp.role = "weight"}) attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    return
  }
}

// -----

// pp.stage_costs is read as the manifest's stage_costs is.
// expected-error @+1 {{pp.stage_costs[0]: unknown field "flop" (expected backward_input_us, backward_weight_us, boundary, }}
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{flop = 1.0 : f64}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
  func.func @stage0_forward(%y: tensor<2xf32> {pp.name = "y", pp.role = "label"}) attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    return
  }
}

// -----

// expected-error @+1 {{pp.stage_costs[0].rank: expected an integer, found 1.5}}
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{rank = 1.5 : f64}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
  func.func @stage0_forward(%y: tensor<2xf32> {pp.name = "y", pp.role = "label"}) attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    return
  }
}

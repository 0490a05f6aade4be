// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=3 microbatch-size=2 loss=mse:y split-points=act,skip" 2>/dev/null | FileCheck %s --check-prefix=THREE
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=1 microbatch-size=2 loss=mse:y" 2>/dev/null | FileCheck %s --check-prefix=ONE
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 microbatch-size=2 infer=true" 2>/dev/null | FileCheck %s --check-prefix=INFER
// RUN: pp-opt %s --pp-derive-eval | FileCheck %s

// A forward-only program's forward already is its eval: pp-compile
// infer=true derives none.
// INFER: func.func @stage1_forward(
// INFER-NOT: _eval

// Three stages of mlp.mlir: each eval function is its forward without the
// saved results (and, here, nothing else was only saved). The sends and
// receives keep the forward's names; the last stage returns the loss.
// THREE-LABEL: func.func @stage0_eval(
// THREE-SAME: %{{.*}}: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}
// THREE-SAME: {pp.name = "w1", pp.role = "parameter", pp.stage = 0 : i64}
// THREE-SAME: {pp.name = "b1", pp.role = "parameter", pp.stage = 0 : i64})
// THREE-SAME: attributes {pp.phase = #pp.phase<eval>, pp.stage = 0 : i64}
// THREE: nn.matmul
// THREE-NEXT: nn.add
// THREE-NEXT: pp.send @pipeline %[[H:.*]] to 1 names ["fc1"]
// THREE-NEXT: pp.send @pipeline %[[H]] to 2 names ["fc1"]
// THREE-NEXT: return{{$}}
// THREE-LABEL: func.func @stage1_eval(
// THREE-SAME: {pp.name = "w2", pp.role = "parameter", pp.stage = 1 : i64})
// THREE-SAME: attributes {pp.phase = #pp.phase<eval>, pp.stage = 1 : i64}
// THREE: pp.recv @pipeline from 0 names ["fc1"]
// THREE: pp.send @pipeline %{{.*}} to 2 names ["fc2"]
// THREE-NEXT: return{{$}}
// THREE-LABEL: func.func @stage2_eval(
// THREE-SAME: {pp.name = "labels", pp.role = "label"}
// THREE-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
// THREE-SAME: attributes {pp.phase = #pp.phase<eval>, pp.stage = 2 : i64}
// THREE-DAG: pp.recv @pipeline from 1 names ["fc2"]
// THREE-DAG: pp.recv @pipeline from 0 names ["fc1"]
// THREE: %[[LOSS:.*]] = nn.mse_loss
// THREE-NEXT: return %[[LOSS]] : tensor<f32>

// One stage: none of the values the backward saves is a result of the eval.
// ONE-LABEL: func.func @stage0_forward(
// ONE-SAME: {pp.name = "saved:x", pp.role = "saved"}
// ONE-LABEL: func.func @stage0_eval(
// ONE-SAME: {pp.name = "labels", pp.role = "label"})
// ONE-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
// ONE-NOT: pp.send
// ONE-NOT: pp.recv
// ONE: %[[LOSS:.*]] = nn.mse_loss
// ONE-NEXT: return %[[LOSS]] : tensor<f32>

// Four stages written by hand. Stage 1 receives t only for a value it
// saves: t leaves both sides of the message and the tanh that computed it
// goes. Stage 2 only saves what it computes: its eval passes u on. Stage 3
// keeps its dropout (the runtime runs it as the identity in eval).
module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{}, {}, {}, {}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 4, pipeline>]
  func.func @stage0_forward(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"}, %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter", pp.stage = 0 : i64}) -> (tensor<2x4xf32> {pp.name = "saved:x", pp.role = "saved"}) attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64} {
    %h = nn.matmul %x, %w {pp.node = "fc"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %t = nn.tanh %h {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    pp.send @pipeline %h, %t to 1 names ["fc", "act"] : tensor<2x4xf32>, tensor<2x4xf32>
    return %x : tensor<2x4xf32>
  }
  func.func @stage1_forward() -> (tensor<2x4xf32> {pp.name = "saved:e", pp.role = "saved"}) attributes {pp.phase = #pp.phase<forward>, pp.stage = 1 : i64} {
    %h, %t = pp.recv @pipeline from 0 names ["fc", "act"] : tensor<2x4xf32>, tensor<2x4xf32>
    %u = nn.neg %h {pp.node = "u"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %e = nn.exp %t {pp.node = "e"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    pp.send @pipeline %u to 2 names ["u"] : tensor<2x4xf32>
    return %e : tensor<2x4xf32>
  }
  func.func @stage2_forward(%b: tensor<4xf32> {pp.name = "b", pp.role = "parameter", pp.stage = 2 : i64}) -> (tensor<2x4xf32> {pp.name = "saved:s", pp.role = "saved"}) attributes {pp.phase = #pp.phase<forward>, pp.stage = 2 : i64} {
    %u = pp.recv @pipeline from 1 names ["u"] : tensor<2x4xf32>
    %s = nn.add %u, %b {pp.node = "s"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    pp.send @pipeline %u to 3 names ["u"] : tensor<2x4xf32>
    return %s : tensor<2x4xf32>
  }
  func.func @stage3_forward(%labels: tensor<2x4xf32> {pp.name = "labels", pp.role = "label"}) -> (tensor<2x4xf32> {pp.name = "saved:d", pp.role = "saved"}, tensor<f32> {pp.name = "loss", pp.role = "loss"}) attributes {pp.phase = #pp.phase<forward>, pp.stage = 3 : i64} {
    %u = pp.recv @pipeline from 2 names ["u"] : tensor<2x4xf32>
    %d = nn.dropout %u ratio = 1.000000e-01 key = 7 {pp.node = "drop"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = nn.mse_loss %d, %labels reduction<sum> {pp.node = "loss"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
    return %d, %l : tensor<2x4xf32>, tensor<f32>
  }
}

// The forward functions are left as they were.
// CHECK-LABEL: func.func @stage0_forward(
// CHECK: nn.tanh
// CHECK: pp.send @pipeline %{{.*}}, %{{.*}} to 1 names ["fc", "act"]
// CHECK-LABEL: func.func @stage3_forward(
// CHECK-SAME: -> (tensor<2x4xf32> {pp.name = "saved:d", pp.role = "saved"}, tensor<f32> {pp.name = "loss", pp.role = "loss"})

// CHECK-LABEL: func.func @stage0_eval(
// CHECK-SAME: {pp.name = "x", pp.role = "input"}
// CHECK-SAME: {pp.name = "w", pp.role = "parameter", pp.stage = 0 : i64})
// CHECK-SAME: attributes {pp.phase = #pp.phase<eval>, pp.stage = 0 : i64}
// CHECK-NEXT: %[[H:.*]] = nn.matmul
// CHECK-NEXT: pp.send @pipeline %[[H]] to 1 names ["fc"] : tensor<2x4xf32>
// CHECK-NEXT: return{{$}}

// Nothing of stage 1's eval reads its arguments (it has none here) or
// computes e.
// CHECK-LABEL: func.func @stage1_eval()
// CHECK-SAME: attributes {pp.phase = #pp.phase<eval>, pp.stage = 1 : i64}
// CHECK-NEXT: %[[H1:.*]] = pp.recv @pipeline from 0 names ["fc"] : tensor<2x4xf32>
// CHECK-NEXT: %[[U:.*]] = nn.neg %[[H1]]
// CHECK-NEXT: pp.send @pipeline %[[U]] to 2 names ["u"]
// CHECK-NEXT: return{{$}}

// Stage 2's eval only passes u on: the parameter b is no argument.
// CHECK-LABEL: func.func @stage2_eval()
// CHECK-SAME: attributes {pp.phase = #pp.phase<eval>, pp.stage = 2 : i64}
// CHECK-NEXT: %[[U2:.*]] = pp.recv @pipeline from 1 names ["u"]
// CHECK-NEXT: pp.send @pipeline %[[U2]] to 3 names ["u"]
// CHECK-NEXT: return{{$}}

// CHECK-LABEL: func.func @stage3_eval(
// CHECK-SAME: {pp.name = "labels", pp.role = "label"})
// CHECK-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
// CHECK-NEXT: %[[U3:.*]] = pp.recv @pipeline from 2 names ["u"]
// CHECK-NEXT: %[[D:.*]] = nn.dropout %[[U3]] ratio = 1.000000e-01 key = 7
// CHECK-NEXT: %[[L:.*]] = nn.mse_loss %[[D]]
// CHECK-NEXT: return %[[L]] : tensor<f32>

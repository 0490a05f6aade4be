// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2" 2>&1 | FileCheck %s
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" 2>%t.remarks | FileCheck %s --check-prefix=SPLIT
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

// Balanced: each stage's cost is reported, the pipeline mesh is declared,
// each parameter lives with its first user, and the ops of each stage and
// phase move into one isolated pp.stage op, in schedule order (forward
// ascending, backward descending).
// CHECK: pp-partition:0:0: remark: stage 0: nodes fc1 .. {{.*}} MFLOP, {{.*}} MB moved, {{.*}} MB sent on, estimated {{.*}} us per microbatch
// CHECK: remark: {{.*}}stage 1: nodes {{.*}} .. loss
// CHECK: pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
// CHECK: func.func @main(
// CHECK-SAME: {pp.name = "w1", pp.role = "parameter", pp.stage = 0 : i64}
// CHECK-SAME: {pp.name = "w3", pp.role = "parameter", pp.stage = 1 : i64}
// CHECK-SAME: pp.stage_costs = [{backward_input_us = {{.*}}, boundary = [{bytes = 3.200000e+01 : f64, name = "fc1"}, {bytes = 3.200000e+01 : f64, name = "act"}], {{.*}}first_node = "fc1"{{.*}}rank = 0 : i64
// CHECK: %[[S0:.*]]:2 = pp.stage @pipeline stage 0 ins(
// CHECK: nn.matmul {{.*}} {pp.node = "fc1"}
// CHECK: pp.yield
// CHECK: %[[S1:.*]]:{{[0-9]+}} = pp.stage @pipeline stage 1 ins(
// CHECK: nn.mse_loss {{.*}} {pp.node = "loss"}
// CHECK: pp.stage @pipeline stage 1 phase<backward> ins(
// CHECK: nn.mse_loss_grad {{.*}} {pp.node = "loss"}
// CHECK: pp.stage @pipeline stage 0 phase<backward> ins(
// CHECK: nn.sum_to {{.*}} {pp.node = "fc1"}
// CHECK: return %[[S1]]#

// Split points name the first node of each later stage.
// SPLIT: pp.mesh @pipeline [#pp.axis<"pp" = 3, pipeline>]
// Stage 0 sends h (2x4 f32, 32 bytes; counted once though two stages use it),
// stage 1 sends z, the last stage nothing.
// SPLIT: sent_bytes = 3.200000e+01
// SPLIT-SAME: sent_bytes = 3.200000e+01
// SPLIT-SAME: sent_bytes = 0.000000e+00
// SPLIT: pp.stage @pipeline stage 0 ins
// SPLIT: nn.matmul {{.*}} {pp.node = "fc1"}
// SPLIT: pp.stage @pipeline stage 1 ins
// SPLIT: nn.tanh {{.*}} {pp.node = "act"}
// SPLIT: nn.matmul {{.*}} {pp.node = "fc2"}
// SPLIT: pp.stage @pipeline stage 2 ins
// SPLIT: nn.add {{.*}} {pp.node = "skip"}
// REMARK: stage 0: nodes fc1 .. fc1 (1 nodes)
// REMARK: stage 1: nodes act .. fc2 (2 nodes)
// REMARK: stage 2: nodes skip .. loss (3 nodes)

// RUN: pp-opt %s --split-input-file --pp-partition="stages=2" 2>/dev/null | FileCheck %s --check-prefix=CONST
// A constant is no node: each stage that uses it gets its own copy, so no
// constant ever travels between stages; a parameter no op uses enters its
// stage's forward and stays a parameter of the package.
// CONST-LABEL: func.func @main(
// CONST: pp.stage @pipeline stage 0 ins(%arg0, %arg1, %arg2)
// CONST-NEXT: ^bb0
// CONST-NEXT: %[[C0:.*]] = arith.constant {{.*}}dense<2.000000e+00>
// CONST-NEXT: nn.mul %{{.*}}, %[[C0]] {pp.node = "first"}
// CONST: pp.stage @pipeline stage 1 ins(
// CONST-NEXT: ^bb0
// CONST-NEXT: %[[C1:.*]] = arith.constant {{.*}}dense<2.000000e+00>
// CONST-NEXT: nn.mul %{{.*}}, %[[C1]] {pp.node = "second"}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2xf32> {pp.name = "w", pp.role = "parameter"},
                %unused: tensor<2xf32> {pp.name = "unused", pp.role = "parameter"})
    -> (tensor<2xf32> {pp.name = "y"}) {
  %c = arith.constant {pp.node = "first"} dense<2.0> : tensor<2xf32>
  %a = nn.mul %x, %c {pp.node = "first"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = nn.mul %a, %w {pp.node = "first"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %d = nn.mul %b, %c {pp.node = "second"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %d : tensor<2xf32>
}

// Upstream canonicalization between the passes merges equal constants only
// inside a stage: no transfer ever carries a constant.
// RUN: pp-opt %s --split-input-file --canonicalize --pp-partition="stages=2" --canonicalize --cse --pp-insert-send-recv 2>/dev/null | FileCheck %s --check-prefix=UPSTREAM
// UPSTREAM: %[[S0:.*]] = pp.stage @pipeline stage 0
// UPSTREAM: pp.transfer @pipeline %[[S0]] from 0 to 1 names ["first"] : tensor<2xf32>
// UPSTREAM-NOT: pp.transfer
// UPSTREAM: return

// An op outside every node runs after its operands; a constant the program
// returns passes through the first stage's forward; a parameter only a
// backward op uses enters its stage's forward, so that every parameter
// reaches the package.
// RUN: pp-opt %s --split-input-file --pp-partition="stages=2" 2>/dev/null | FileCheck %s --check-prefix=PLACE
// PLACE: {pp.name = "v", pp.role = "parameter", pp.stage = 1 : i64}
// PLACE-NEXT: %[[S0:.*]]:2 = pp.stage @pipeline stage 0 ins(
// PLACE: %[[C:.*]] = arith.constant dense<2.000000e+00>
// PLACE-NEXT: pp.yield %{{.*}}, %[[C]]
// PLACE: %[[S1:.*]] = pp.stage @pipeline stage 1 ins(
// PLACE: nn.neg
// PLACE: return %[[S1]], %[[S0]]#1

// -----

func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2xf32> {pp.name = "w", pp.role = "parameter"},
                %v: tensor<2xf32> {pp.name = "v", pp.role = "parameter"})
    -> (tensor<2xf32>, tensor<2xf32>) {
  %c = arith.constant dense<2.0> : tensor<2xf32>
  %a = nn.mul %x, %w {pp.node = "first"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = nn.mul %a, %v {pp.node = "second"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %u = nn.neg %b : (tensor<2xf32>) -> tensor<2xf32>
  return %u, %c : tensor<2xf32>, tensor<2xf32>
}

// -----

// PLACE: {pp.name = "w2", pp.role = "frozen", pp.stage = 1 : i64}
// PLACE: pp.stage @pipeline stage 1 ins(%{{.*}}, %arg2)
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2xf32> {pp.name = "w", pp.role = "parameter"},
                %w2: tensor<2xf32> {pp.name = "w2", pp.role = "frozen"},
                %s: tensor<2xf32> {pp.name = "s", pp.role = "loss_scale"})
    -> (tensor<2xf32>, tensor<2xf32>) {
  %a = nn.mul %x, %w {pp.node = "a"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = nn.neg %a {pp.node = "b"} : (tensor<2xf32>) -> tensor<2xf32>
  %g = nn.mul %s, %w2 {pp.node = "b", pp.phase = #pp.phase<backward>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %h = nn.mul %g, %x {pp.node = "a", pp.phase = #pp.phase<backward>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %b, %h : tensor<2xf32>, tensor<2xf32>
}

// A weight used on several stages (tied: an embedding and an LM head) is
// held by each: pp.stage is the first holder, the owner, and
// pp.holder_stages lists them all. Its gradient comes from pp-autodiff in
// one part per node using it (pp.gradient_part): each holder's backward
// returns the parts computed there (no partial gradient travels); the
// runtime sums each part over the microbatches and adds the parts in
// order. Stage 1 does not hold it.
// RUN: pp-opt %S/Inputs/tied-loss.mlir --pp-autodiff --pp-partition="split-points=act,head" 2>/dev/null | FileCheck %s --check-prefix=TIED
// TIED: func.func @main(
// TIED-SAME: {pp.holder_stages = array<i64: 0, 2>, pp.name = "tied", pp.role = "parameter", pp.stage = 0 : i64}
// TIED-SAME: {pp.name = "mid", pp.role = "parameter", pp.stage = 1 : i64}
// TIED-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<4x4xf32> {pp.gradient_part = 0 : i64, pp.name = "tied", pp.role = "gradient"}, tensor<4x4xf32> {pp.gradient_part = 1 : i64, pp.name = "tied", pp.role = "gradient"}, tensor<4x4xf32> {pp.name = "mid", pp.role = "gradient"})
// TIED: %[[F0:.*]] = pp.stage @pipeline stage 0 ins(%arg0, %arg1)
// TIED: %[[F1:.*]]:2 = pp.stage @pipeline stage 1 ins(%[[F0]], %arg2)
// TIED: %[[F2:.*]]:2 = pp.stage @pipeline stage 2 ins(%[[F1]]#1, %arg1, %arg3)
// TIED: nn.matmul %{{.*}}, %{{.*}} transpose_rhs {pp.node = "head"}
// TIED: %[[B2:.*]]:2 = pp.stage @pipeline stage 2 phase<backward>
// TIED: %[[HEAD:.*]] = nn.matmul %{{.*}}, %{{.*}} transpose_lhs {pp.node = "head"}
// TIED: pp.yield %{{.*}}, %[[HEAD]]
// TIED: %[[B1:.*]]:2 = pp.stage @pipeline stage 1 phase<backward>
// TIED: %[[B0:.*]] = pp.stage @pipeline stage 0 phase<backward>
// TIED: %[[EMBED:.*]] = nn.matmul %{{.*}}, %{{.*}} transpose_lhs {pp.node = "embed"}
// TIED: pp.yield %[[EMBED]]
// TIED: return %[[F2]]#1, %[[B0]], %[[B2]]#1, %[[B1]]#0

// On one stage the parameter is not tied, and its backward returns the same
// two parts: one stage adds what many do.
// RUN: pp-opt %S/Inputs/tied-loss.mlir --pp-autodiff --pp-partition="stages=1" 2>/dev/null | FileCheck %s --check-prefix=ONESTAGE
// ONESTAGE: {pp.name = "tied", pp.role = "parameter", pp.stage = 0 : i64}
// ONESTAGE-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<4x4xf32> {pp.gradient_part = 0 : i64, pp.name = "tied", pp.role = "gradient"}, tensor<4x4xf32> {pp.gradient_part = 1 : i64, pp.name = "tied", pp.role = "gradient"}, tensor<4x4xf32> {pp.name = "mid", pp.role = "gradient"})
// ONESTAGE: %[[B:.*]]:3 = pp.stage @pipeline stage 0 phase<backward>
// ONESTAGE: %[[HEAD:.*]] = nn.matmul %{{.*}} transpose_lhs {pp.node = "head"}
// ONESTAGE: %[[EMBED:.*]] = nn.matmul %{{.*}} transpose_lhs {pp.node = "embed"}
// ONESTAGE-NOT: nn.add
// ONESTAGE: pp.yield %[[HEAD]], %{{.*}}, %[[EMBED]]
// ONESTAGE: return %{{.*}}, %[[B]]#2, %[[B]]#0, %[[B]]#1

// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=full" --pp-recompute 2>/dev/null | FileCheck %s --check-prefix=FULL
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=selective" --pp-recompute 2>/dev/null | FileCheck %s --check-prefix=SELECTIVE
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute-ops=nn\.tanh" --pp-recompute 2>/dev/null | FileCheck %s --check-prefix=OPS
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2" --pp-recompute 2>/dev/null > %t.none
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2" 2>/dev/null | diff - %t.none

// full: each stage's backward recomputes its whole forward from what the
// stage receives (stage 1: the activations of fc1 and act), its graph
// inputs and its parameters; stage 1's forward then hands its backward
// nothing but the loss, and stage 0's backward recomputes from x. The
// policy is recorded per stage.
// FULL: pp.stage_costs = [{{{.*}}recompute = "full"{{.*}}}, {{{.*}}recompute = "full"
// FULL: %[[F0:.*]]:2 = pp.stage @pipeline stage 0 ins(%arg0, %arg1, %arg2)
// FULL: %[[F1:.*]] = pp.stage @pipeline stage 1 ins({{.*}}) : ({{.*}}) -> tensor<f32>
// FULL: pp.stage @pipeline stage 1 phase<backward> ins({{.*}}%[[F0]]#1, %[[F0]]#0)
// FULL-NEXT: ^bb0(
// FULL-NEXT: nn.matmul {{.*}} {pp.node = "fc2", pp.recomputed}
// FULL-NEXT: nn.add {{.*}} {pp.node = "skip", pp.recomputed}
// FULL-NEXT: nn.matmul {{.*}} {pp.node = "out", pp.recomputed}
// FULL-NEXT: nn.mse_loss_grad
// FULL: pp.stage @pipeline stage 0 phase<backward> ins({{.*}}%arg0, %arg1, %arg2)
// FULL-NEXT: ^bb0(
// FULL-NEXT: nn.matmul {{.*}} {pp.node = "fc1", pp.recomputed}
// FULL-NEXT: nn.add {{.*}} {pp.node = "fc1", pp.recomputed}
// FULL-NEXT: nn.tanh {{.*}} {pp.node = "act", pp.recomputed}
// FULL-NEXT: nn.tanh_grad

// selective: the results of matrix products with a weight are kept (fc2's
// and out's on stage 1, fc1's on stage 0, which stage 0 now hands its
// backward); the rest (the residual sum, the bias add, tanh) is recomputed
// from them. The copies are marked pp.recomputed.
// SELECTIVE: pp.stage_costs = [{{{.*}}recompute = "selective"
// SELECTIVE: %[[F0:.*]]:3 = pp.stage @pipeline stage 0 ins(
// SELECTIVE: %[[MM:.*]] = nn.matmul {{.*}} {pp.node = "fc1"}
// SELECTIVE: pp.yield {{.*}}, %[[MM]] :
// SELECTIVE: pp.stage @pipeline stage 1 phase<backward>
// SELECTIVE-NEXT: ^bb0(
// SELECTIVE-NEXT: nn.add {{.*}} {pp.node = "skip", pp.recomputed}
// SELECTIVE-NEXT: nn.mse_loss_grad
// SELECTIVE: pp.stage @pipeline stage 0 phase<backward> ins({{.*}}%[[F0]]#2, %arg2)
// SELECTIVE-NEXT: ^bb0(
// SELECTIVE-NEXT: nn.add {{.*}} {pp.node = "fc1", pp.recomputed}
// SELECTIVE-NEXT: nn.tanh {{.*}} {pp.node = "act", pp.recomputed}
// SELECTIVE-NEXT: nn.tanh_grad

// recompute-ops names op kinds: only tanh is recomputed, from the bias add's
// result, which stage 0 already hands its backward.
// OPS: pp.stage_costs = [{{{.*}}recompute = "ops", recompute_ops = "nn\\.tanh"
// OPS: pp.stage @pipeline stage 0 phase<backward>
// OPS-NEXT: ^bb0(
// OPS-NEXT: nn.tanh {{.*}} {pp.node = "act", pp.recomputed}
// OPS-NEXT: nn.tanh_grad

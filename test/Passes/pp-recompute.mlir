// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=full" --pp-recompute 2>/dev/null | FileCheck %s --check-prefix=FULL
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=selective" --pp-recompute 2>/dev/null | FileCheck %s --check-prefix=SELECTIVE
// RUN: pp-opt %S/Inputs/mlp-chain-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=selective" --pp-recompute 2>/dev/null | FileCheck %s --check-prefix=CHAIN
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
// and out's on stage 1), and so is fc1's bias add in the place of fc1's
// product, which nothing else reads (recomputing the add would keep the
// product instead, as large); the rest (the residual sum, tanh) is
// recomputed from them. The copies are marked pp.recomputed.
// SELECTIVE: pp.stage_costs = [{{{.*}}recompute = "selective"
// SELECTIVE: %[[F0:.*]]:2 = pp.stage @pipeline stage 0 ins(
// SELECTIVE: %[[H:.*]] = nn.add {{.*}} {pp.node = "fc1"}
// SELECTIVE: pp.yield %[[H]], {{.*}} :
// SELECTIVE: pp.stage @pipeline stage 1 phase<backward>
// SELECTIVE-NEXT: ^bb0(
// SELECTIVE-NEXT: nn.add {{.*}} {pp.node = "skip", pp.recomputed}
// SELECTIVE-NEXT: nn.mse_loss_grad
// SELECTIVE: pp.stage @pipeline stage 0 phase<backward> ins({{.*}}%[[F0]]#0)
// SELECTIVE-NEXT: ^bb0(
// SELECTIVE-NEXT: nn.tanh {{.*}} {pp.node = "act", pp.recomputed}
// SELECTIVE-NEXT: nn.tanh_grad

// selective recomputes nothing that would free nothing: where fc1's bias
// add and the tanh after it only carry fc1's product on (nothing else
// reads the product or the sum, and tanh's gradient reads tanh's result),
// stage 1 keeps the tanh's result it computes from what stage 0 sends
// rather than recomputing it from that, as large.
// CHAIN: pp.stage_costs = [{{{.*}}recompute = "selective"{{.*}}}, {{{.*}}recompute = "selective"
// CHAIN-NOT: pp.recomputed
// CHAIN: %[[A:.*]] = nn.tanh {{.*}} {pp.node = "act"}
// CHAIN: pp.yield %[[A]],
// CHAIN-NOT: pp.recomputed
// CHAIN: nn.tanh_grad
// CHAIN-NOT: pp.recomputed

// recompute-ops names op kinds: only tanh is recomputed, from the bias add's
// result, which stage 0 already hands its backward.
// OPS: pp.stage_costs = [{{{.*}}recompute = "ops", recompute_ops = "nn\\.tanh"
// OPS: pp.stage @pipeline stage 0 phase<backward>
// OPS-NEXT: ^bb0(
// OPS-NEXT: nn.tanh {{.*}} {pp.node = "act", pp.recomputed}
// OPS-NEXT: nn.tanh_grad

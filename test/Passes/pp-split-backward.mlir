// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-split-backward 2>/dev/null | FileCheck %s
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-split-backward | pp-opt | FileCheck %s
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-split-backward --pp-outline-stages 2>/dev/null | FileCheck %s --check-prefix=OUTLINE
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=1" --pp-insert-send-recv --pp-split-backward 2>/dev/null | FileCheck %s --check-prefix=ONE
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff="freeze=w2" --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-split-backward --pp-outline-stages 2>/dev/null | FileCheck %s --check-prefix=FROZEN
// RUN: pp-opt %S/Inputs/tied-loss.mlir --pp-autodiff --pp-partition="split-points=mid" --pp-insert-send-recv --pp-split-backward 2>/dev/null | FileCheck %s --check-prefix=TIED
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=3 microbatch-size=2 loss=mse:y split-points=act,skip split-backward=true" 2>/dev/null > %t.compiled
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-attach-loss="loss=mse:y microbatch-size=2" --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-split-backward --pp-outline-stages --pp-derive-eval --pp-fuse-elementwise 2>/dev/null > %t.passes
// RUN: diff %t.compiled %t.passes
// RUN: FileCheck %s --check-prefix=COMPILE < %t.compiled
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=full" --pp-recompute --pp-insert-send-recv --pp-split-backward 2>/dev/null | FileCheck %s --check-prefix=RECOMPUTED

// Three stages of an MLP. The last stage's input half computes the loss
// gradient and the gradient it sends (out.grad); the weight half takes the
// loss gradient from it and the forward's activation (skip) directly.
// CHECK-LABEL: func.func @main
// CHECK: %[[F1:.*]]:2 = pp.stage @pipeline stage 1 ins(
// CHECK: %[[F2:.*]]:3 = pp.stage @pipeline stage 2 ins(
// CHECK: %[[I2:.*]]:2 = pp.stage @pipeline stage 2 phase<backward_input> ins(%{{.*}}, %[[F2]]#1, %{{.*}}, %{{.*}})
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %[[DY:.*]] = nn.mse_loss_grad
// CHECK-NEXT: %[[DX:.*]] = nn.matmul %[[DY]], %{{[^ ]*}} {pp.node = "out"}
// CHECK-NEXT: pp.yield %[[DX]], %[[DY]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[W2:.*]] = pp.stage @pipeline stage 2 phase<backward_weight> ins(%[[F2]]#0, %[[I2]]#1)
// CHECK-NEXT: ^bb0(%[[SKIP:.*]]: tensor<2x4xf32>, %[[G:.*]]: tensor<2x3xf32>):
// CHECK-NEXT: %[[DW3:.*]] = nn.matmul %[[G]], %[[SKIP]] transpose_lhs {pp.node = "out"}
// CHECK-NEXT: pp.yield %[[DW3]]
// CHECK-NEXT: }
// The transfers carry the input half's results.
// CHECK-NEXT: %[[T21:.*]] = pp.transfer @pipeline %[[I2]]#0 from 2 to 1 names ["out.grad"]
// CHECK-NEXT: %[[T20:.*]] = pp.transfer @pipeline %[[I2]]#0 from 2 to 0 names ["out.grad"]
// A gradient received from another stage enters the input half, which hands
// it on to the weight half with what else it computed that W needs.
// CHECK-NEXT: %[[I1:.*]]:2 = pp.stage @pipeline stage 1 phase<backward_input> ins(%[[T21]], %{{.*}}, %[[F1]]#0)
// CHECK-NEXT: ^bb0(%[[R:.*]]: tensor<2x4xf32>, %{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<2x4xf32>):
// CHECK-NEXT: nn.matmul %[[R]], %{{[^ ]*}} {pp.node = "fc2"}
// CHECK-NEXT: %[[DA:.*]] = nn.tanh_grad
// CHECK-NEXT: pp.yield %[[DA]], %[[R]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[W1:.*]] = pp.stage @pipeline stage 1 phase<backward_weight> ins(%[[F1]]#0, %[[I1]]#1)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "fc2"}
// CHECK-NEXT: pp.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[T10:.*]] = pp.transfer @pipeline %[[I1]]#0 from 1 to 0 names ["act.grad"]
// Stage 0 sends nothing: its input half only receives.
// CHECK-NEXT: %[[I0:.*]]:2 = pp.stage @pipeline stage 0 phase<backward_input> ins(%[[T20]], %[[T10]])
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<2x4xf32>):
// CHECK-NEXT: pp.yield %[[A]], %[[B]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[W0:.*]]:2 = pp.stage @pipeline stage 0 phase<backward_weight> ins(%arg0, %[[I0]]#0, %[[I0]]#1)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: nn.add
// CHECK-NEXT: nn.sum_to
// CHECK-NEXT: nn.matmul
// CHECK-NEXT: pp.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %{{.*}}, %[[W0]]#1, %[[W0]]#0, %[[W1]], %[[W2]]
// CHECK-NOT: phase<backward>

// Outlined: forward, backward_input, backward_weight functions; what B hands
// to W is saved under the name it travelled under or of the node computing
// it; a forward value both halves take is saved once (saved:act).
// OUTLINE-LABEL: func.func @stage1_forward(
// OUTLINE-SAME: -> (tensor<2x4xf32> {pp.name = "saved:act", pp.role = "saved"})
// OUTLINE-LABEL: func.func @stage0_backward_input()
// OUTLINE-SAME: -> (tensor<2x4xf32> {pp.name = "saved:out.grad", pp.role = "saved"}, tensor<2x4xf32> {pp.name = "saved:act.grad", pp.role = "saved"})
// OUTLINE-SAME: attributes {pp.phase = #pp.phase<backward_input>, pp.stage = 0 : i64}
// OUTLINE-NEXT: pp.recv @pipeline from 2 names ["out.grad"]
// OUTLINE-NEXT: pp.recv @pipeline from 1 names ["act.grad"]
// OUTLINE-LABEL: func.func @stage1_backward_input(
// OUTLINE-SAME: {pp.name = "saved:act", pp.role = "saved"}
// OUTLINE-SAME: -> (tensor<2x4xf32> {pp.name = "saved:out.grad", pp.role = "saved"})
// OUTLINE: pp.send @pipeline %{{.*}} to 0 names ["act.grad"]
// OUTLINE-LABEL: func.func @stage2_backward_input(
// OUTLINE-SAME: -> (tensor<2x3xf32> {pp.name = "saved:loss", pp.role = "saved"})
// OUTLINE: pp.send @pipeline %{{.*}} to 1 names ["out.grad"]
// OUTLINE: pp.send @pipeline %{{.*}} to 0 names ["out.grad"]
// OUTLINE-LABEL: func.func @stage0_backward_weight(
// OUTLINE-SAME: {pp.name = "saved:x", pp.role = "saved"}, %{{.*}}: tensor<2x4xf32> {pp.name = "saved:out.grad", pp.role = "saved"}, %{{.*}}: tensor<2x4xf32> {pp.name = "saved:act.grad", pp.role = "saved"})
// OUTLINE-SAME: -> (tensor<4x3xf32> {pp.name = "w1", pp.role = "gradient"}, tensor<4xf32> {pp.name = "b1", pp.role = "gradient"})
// OUTLINE-NOT: pp.recv
// OUTLINE-LABEL: func.func @stage1_backward_weight(
// OUTLINE-SAME: {pp.name = "saved:act", pp.role = "saved"}, %{{.*}}: tensor<2x4xf32> {pp.name = "saved:out.grad", pp.role = "saved"})
// OUTLINE-SAME: -> (tensor<4x4xf32> {pp.name = "w2", pp.role = "gradient"})
// OUTLINE-LABEL: func.func @stage2_backward_weight(
// OUTLINE-SAME: {pp.name = "saved:skip", pp.role = "saved"}, %{{.*}}: tensor<2x3xf32> {pp.name = "saved:loss", pp.role = "saved"})
// OUTLINE-SAME: -> (tensor<3x4xf32> {pp.name = "w3", pp.role = "gradient"})
// OUTLINE-NOT: pp.send
// OUTLINE-NOT: func.func @stage{{.}}_backward(

// One stage sends no gradient: its input half is empty, the weight half
// holds the whole backward.
// ONE: pp.stage @pipeline stage 0 phase<backward_input> ins() : () -> () {
// ONE-NEXT: pp.yield
// ONE-NEXT: }
// ONE-NEXT: %[[W:.*]]:4 = pp.stage @pipeline stage 0 phase<backward_weight>
// ONE-COUNT-5: nn.matmul
// ONE: return %{{.*}}, %[[W]]#3, %[[W]]#2, %[[W]]#1, %[[W]]#0

// A stage whose parameters are frozen has an empty weight half.
// FROZEN-LABEL: func.func @stage1_backward_input(
// FROZEN-SAME: {pp.name = "w2", pp.role = "frozen", pp.stage = 1 : i64}
// FROZEN: pp.send @pipeline %{{.*}} to 0 names ["act.grad"]
// FROZEN-LABEL: func.func @stage1_backward_weight()
// FROZEN-SAME: attributes {pp.phase = #pp.phase<backward_weight>, pp.stage = 1 : i64}
// FROZEN-NEXT: return
// FROZEN-NEXT: }

// A tied weight's gradient parts are weight-half results on both holders.
// TIED: %[[I1:.*]]:3 = pp.stage @pipeline stage 1 phase<backward_input>
// TIED-NOT: transpose_lhs
// TIED: pp.yield
// TIED: %[[W1:.*]]:2 = pp.stage @pipeline stage 1 phase<backward_weight>
// TIED-NEXT: ^bb0(
// TIED-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "head"}
// TIED-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "mid"}
// TIED: pp.stage @pipeline stage 0 phase<backward_input>
// TIED: %[[W0:.*]] = pp.stage @pipeline stage 0 phase<backward_weight>
// TIED-NEXT: ^bb0(
// TIED-NEXT: nn.tanh_grad
// TIED-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "embed"}
// TIED: return %{{.*}}, %[[W0]], %[[W1]]#0, %[[W1]]#1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>

// pp-compile's split-backward=true runs the pass before pp-outline-stages:
// every stage gets both halves, in the order they run.
// COMPILE-COUNT-3: func.func @stage{{[0-2]}}_forward
// COMPILE-COUNT-3: func.func @stage{{[0-2]}}_backward_input
// COMPILE-COUNT-3: func.func @stage{{[0-2]}}_backward_weight
// COMPILE-COUNT-3: func.func @stage{{[0-2]}}_eval

// Recomputed forward values (pp-recompute's, marked pp.recomputed) are not
// handed from the input half to the weight half, where a zero-bubble
// schedule would keep them in flight until it runs: the weight half makes
// them again from the forward's kept values (stage 1's fc2 and skip; stage
// 0's whole forward, which its input half, sending nothing back, does not
// need).
// RECOMPUTED: pp.stage @pipeline stage 1 phase<backward_input>
// RECOMPUTED: nn.add {{.*}} {pp.node = "skip", pp.recomputed}
// RECOMPUTED: pp.stage @pipeline stage 1 phase<backward_weight>
// RECOMPUTED-NEXT: ^bb0(
// RECOMPUTED-NEXT: nn.matmul {{.*}} {pp.node = "fc2", pp.recomputed}
// RECOMPUTED-NEXT: %[[SKIP:.*]] = nn.add {{.*}} {pp.node = "skip", pp.recomputed}
// RECOMPUTED-NEXT: nn.matmul %{{.*}}, %[[SKIP]] transpose_lhs {pp.node = "out"}
// RECOMPUTED: pp.stage @pipeline stage 0 phase<backward_weight>
// RECOMPUTED-NEXT: ^bb0(
// RECOMPUTED-NEXT: nn.matmul {{.*}} {pp.node = "fc1", pp.recomputed}

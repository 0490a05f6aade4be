// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv 2>/dev/null | FileCheck %s

// h (fc1, stage 0) feeds tanh on stage 1 and skips straight to stage 2; the
// gradient of the skip comes straight back from stage 2 to stage 0. Each
// value has one name wherever it goes; stage ops of the receiving stage take
// the transferred value.
// CHECK: %[[S0:.*]] = pp.stage @pipeline stage 0 ins(
// CHECK: %[[H1:.*]] = pp.transfer @pipeline %[[S0]] from 0 to 1 names ["fc1"] : tensor<2x4xf32>
// CHECK-NEXT: %[[H2:.*]] = pp.transfer @pipeline %[[S0]] from 0 to 2 names ["fc1"] : tensor<2x4xf32>
// CHECK-NEXT: %[[S1:.*]]:2 = pp.stage @pipeline stage 1 ins(%[[H1]],
// CHECK: %[[Z2:.*]] = pp.transfer @pipeline %[[S1]]#1 from 1 to 2 names ["fc2"]
// CHECK-NEXT: %[[S2:.*]]:3 = pp.stage @pipeline stage 2 ins(%[[Z2]], %[[H2]],
// CHECK: %[[B2:.*]]:2 = pp.stage @pipeline stage 2 phase<backward>
// CHECK: pp.transfer @pipeline %[[B2]]#0 from 2 to 1 names ["out.grad"]
// CHECK-NEXT: %[[DS0:.*]] = pp.transfer @pipeline %[[B2]]#0 from 2 to 0 names ["out.grad"]
// Stage 1's backward takes its own forward's value as it is: no transfer.
// CHECK: %[[B1:.*]]:2 = pp.stage @pipeline stage 1 phase<backward> ins({{.*}}, %[[S1]]#0)
// CHECK: %[[DA:.*]] = pp.transfer @pipeline %[[B1]]#1 from 1 to 0 names ["act.grad"]
// CHECK: pp.stage @pipeline stage 0 phase<backward> ins(%[[DS0]], %[[DA]],

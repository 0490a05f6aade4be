// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv 2>/dev/null | FileCheck %s

// h (fc1, stage 0) feeds tanh on stage 1 and skips straight to stage 2; the
// gradient of the skip comes straight back from stage 2 to stage 0. Uses on
// the receiving stage read the transferred value.
// CHECK: %[[H:.*]] = nn.add {{.*}} {pp.node = "fc1", pp.stage = 0 : i64}
// CHECK-NEXT: %[[H1:.*]] = pp.transfer @pipeline %[[H]] from 0 to 1 names ["fc1"] : tensor<2x4xf32>
// CHECK-NEXT: %[[H2:.*]] = pp.transfer @pipeline %[[H]] from 0 to 2 names ["fc1"] : tensor<2x4xf32>
// CHECK: nn.tanh %[[H1]] {pp.node = "act", pp.stage = 1 : i64}
// CHECK: %[[Z:.*]] = nn.matmul {{.*}} {pp.node = "fc2", pp.stage = 1 : i64}
// CHECK-NEXT: %[[Z2:.*]] = pp.transfer @pipeline %[[Z]] from 1 to 2 names ["fc2"]
// CHECK: nn.add %[[Z2]], %[[H2]] {pp.node = "skip", pp.stage = 2 : i64}
// CHECK: %[[DS:.*]] = nn.matmul {{.*}} {pp.node = "out", pp.phase = #pp.phase<backward>, pp.stage = 2 : i64}
// CHECK: pp.transfer @pipeline %[[DS]] from 2 to 1 names ["out.grad"] {pp.phase = #pp.phase<backward>}
// CHECK-NEXT: %[[DS0:.*]] = pp.transfer @pipeline %[[DS]] from 2 to 0 names ["out.grad"] {pp.phase = #pp.phase<backward>}
// CHECK: %[[DA:.*]] = pp.transfer @pipeline %{{.*}} from 1 to 0 names ["act.grad"] {pp.phase = #pp.phase<backward>}
// CHECK: nn.add %[[DS0]], %[[DA]] {pp.node = "fc1", pp.phase = #pp.phase<backward>, pp.stage = 0 : i64}

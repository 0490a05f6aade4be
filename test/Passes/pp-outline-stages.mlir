// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-outline-stages 2>/dev/null | FileCheck %s

// One function per stage and phase; transfers became send/recv pairs;
// forward values the backward needs are returned and taken as "saved",
// named after where they come from.
// CHECK: module attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [
// CHECK: pp.mesh @pipeline
// CHECK-LABEL: func.func @stage0_forward(
// CHECK-SAME: {pp.name = "x", pp.role = "input"}
// CHECK-SAME: {pp.name = "w1", pp.role = "parameter", pp.stage = 0 : i64}
// CHECK-SAME: -> (tensor<2x3xf32> {pp.name = "saved:x", pp.role = "saved"})
// CHECK-SAME: attributes {pp.phase = #pp.phase<forward>, pp.stage = 0 : i64}
// CHECK: pp.send @pipeline %[[H:.*]] to 1 names ["fc1"]
// CHECK-NEXT: pp.send @pipeline %[[H]] to 2 names ["fc1"]
// CHECK-NEXT: return
// CHECK-LABEL: func.func @stage1_forward(
// CHECK-SAME: -> (tensor<2x4xf32> {pp.name = "saved:act", pp.role = "saved"})
// CHECK: pp.recv @pipeline from 0 names ["fc1"] : tensor<2x4xf32>
// CHECK: pp.send @pipeline %{{.*}} to 2 names ["fc2"]
// CHECK-LABEL: func.func @stage2_forward(
// CHECK-SAME: {pp.name = "labels", pp.role = "label"}
// CHECK-SAME: tensor<f32> {pp.name = "loss", pp.role = "loss"}
// CHECK-DAG: pp.recv @pipeline from 0 names ["fc1"]
// CHECK-DAG: pp.recv @pipeline from 1 names ["fc2"]
// The backward takes the graph input x from its forward, like activations.
// CHECK-LABEL: func.func @stage0_backward(
// CHECK-SAME: %{{.*}}: tensor<2x3xf32> {pp.name = "saved:x", pp.role = "saved"}
// CHECK-SAME: -> (tensor<4x3xf32> {pp.name = "w1", pp.role = "gradient"}, tensor<4xf32> {pp.name = "b1", pp.role = "gradient"})
// CHECK: pp.recv @pipeline from 2 names ["out.grad"]
// CHECK: pp.recv @pipeline from 1 names ["act.grad"]
// CHECK-LABEL: func.func @stage1_backward(
// CHECK-SAME: {pp.name = "saved:act", pp.role = "saved"}
// CHECK: pp.send @pipeline %{{.*}} to 0 names ["act.grad"]
// CHECK-LABEL: func.func @stage2_backward(
// CHECK-SAME: {pp.name = "loss_scale", pp.role = "loss_scale"}
// CHECK: pp.send @pipeline %{{.*}} to 1 names ["out.grad"]
// CHECK: pp.send @pipeline %{{.*}} to 0 names ["out.grad"]
// CHECK-NOT: func.func @main

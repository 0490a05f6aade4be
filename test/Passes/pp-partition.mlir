// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2" 2>&1 | FileCheck %s
// RUN: pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=act,skip" 2>%t.remarks | FileCheck %s --check-prefix=SPLIT
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

// Balanced: each stage's cost is reported, the ops are grouped stage by
// stage (forward ascending, backward descending), the pipeline mesh is
// declared and each parameter lives with its first user.
// CHECK: pp-partition:0:0: remark: stage 0: nodes fc1 .. {{.*}} MFLOP, {{.*}} MB moved, {{.*}} MB sent on, estimated {{.*}} us per microbatch
// CHECK: remark: {{.*}}stage 1: nodes {{.*}} .. loss
// CHECK: pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
// CHECK: func.func @main(
// CHECK-SAME: {pp.name = "w1", pp.role = "parameter", pp.stage = 0 : i64}
// CHECK-SAME: {pp.name = "w3", pp.role = "parameter", pp.stage = 1 : i64}
// CHECK-SAME: pp.stage_costs = [{bytes = {{.*}}, first_node = "fc1"
// CHECK: nn.matmul {{.*}} {pp.node = "fc1", pp.stage = 0 : i64}
// CHECK: nn.mse_loss {{.*}} {pp.node = "loss", pp.stage = 1 : i64}
// CHECK: nn.mse_loss_grad {{.*}} pp.stage = 1 : i64
// CHECK: nn.sum_to {{.*}} {pp.node = "fc1", pp.phase = #pp.phase<backward>, pp.stage = 0 : i64}

// Split points name the first node of each later stage.
// SPLIT: pp.mesh @pipeline [#pp.axis<"pp" = 3, pipeline>]
// Stage 0 sends h (2x4 f32, 32 bytes; counted once though two stages use it),
// stage 1 sends z, the last stage nothing.
// SPLIT: sent_bytes = 3.200000e+01
// SPLIT-SAME: sent_bytes = 3.200000e+01
// SPLIT-SAME: sent_bytes = 0.000000e+00
// SPLIT: nn.matmul {{.*}} {pp.node = "fc1", pp.stage = 0 : i64}
// SPLIT: nn.tanh {{.*}} {pp.node = "act", pp.stage = 1 : i64}
// SPLIT: nn.matmul {{.*}} {pp.node = "fc2", pp.stage = 1 : i64}
// SPLIT: nn.add {{.*}} {pp.node = "skip", pp.stage = 2 : i64}
// REMARK: stage 0: nodes fc1 .. fc1 (1 nodes)
// REMARK: stage 1: nodes act .. fc2 (2 nodes)
// REMARK: stage 2: nodes skip .. loss (3 nodes)

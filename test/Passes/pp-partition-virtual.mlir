// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 virtual-stages=2" --pp-insert-send-recv 2>/dev/null | FileCheck %s --check-prefix=LOOP
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 virtual-stages=2 placement=v schedule=zb-v microbatches=4" --pp-insert-send-recv 2>/dev/null | FileCheck %s --check-prefix=V
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 virtual-stages=2 placement=v loss=mse:y" 2>/dev/null | FileCheck %s --check-prefix=COMPILE

// Loop placement: four stages, stage s on rank s mod 2, each stage's cost
// names its rank; every boundary is a transfer, rank 1 to rank 0 included.
// LOOP: pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 1, 0, 1>}
// LOOP: pp.stage_costs = [{{.*}}rank = 0 : i64{{.*}}rank = 1 : i64{{.*}}rank = 0 : i64{{.*}}rank = 1 : i64{{.*}}}]
// LOOP: pp.stage @pipeline stage 0 ins(
// LOOP: pp.transfer @pipeline {{.*}} from 0 to 1
// LOOP: pp.stage @pipeline stage 1 ins(
// LOOP: pp.transfer @pipeline {{.*}} from 1 to 2
// LOOP: pp.stage @pipeline stage 2 ins(
// LOOP: pp.transfer @pipeline {{.*}} from 2 to 3
// LOOP: pp.stage @pipeline stage 3 ins(
// LOOP-NOT: pp.stage @pipeline stage 4

// V placement: stages 1 and 2 share rank 1 and still exchange their
// boundary through a transfer (the runtime passes it locally); on the
// runtime's zb-v table with M = 4 the first stage of each rank holds 3
// microbatches at its peak (a formula's min(M, N) = 2 was short of what
// runs); the stage's boundary has the name the transfer uses.
// V: pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 1, 1, 0>}
// V: pp.stage_costs = [{{.}}backward_input_us{{[^}]*}}boundary = [{bytes = 1.638400e+04 : f64, name = "[[B0:fc[0-9]]]"}]{{[^}]*}}in_flight = 3 : i64{{[^}]*}}rank = 0 : i64
// V: pp.transfer @pipeline {{.*}} from 0 to 1 names ["[[B0]]"]
// V: pp.transfer @pipeline {{.*}} from 1 to 2 names
// V: pp.transfer @pipeline {{.*}} from 2 to 3 names
// V: pp.transfer @pipeline {{.*}} from 2 to 1 names ["{{.*}}.grad"]

// The whole pp-compile pipeline keeps four stages on two ranks: outlined
// forward, backward and eval functions for each.
// COMPILE: pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 1, 1, 0>}
// COMPILE-DAG: func.func @stage3_forward(
// COMPILE-DAG: func.func @stage3_backward(
// COMPILE-DAG: func.func @stage3_eval(
// COMPILE-DAG: func.func @stage2_backward(

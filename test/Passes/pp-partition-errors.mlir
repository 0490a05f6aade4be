// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=7" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=nope" 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=skip,act" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=3 split-points=act" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 placement=v" 2>&1 | FileCheck %s --check-prefix=VSHAPE
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 schedule=dualpipe" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 virtual-stages=2 schedule=zb-v" 2>&1 | FileCheck %s --check-prefix=ZBV
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="virtual-stages=2 split-points=act,fc2" 2>&1 | FileCheck %s --check-prefix=PERRANK
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 virtual-stages=2 split-points=act" 2>&1 | FileCheck %s --check-prefix=VCOUNT
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 link-rate=0" 2>&1 | FileCheck %s --check-prefix=RATE

// MANY: error: cannot split 6 nodes into 7 stages: every stage needs at least one node; use at most 6 stages
// NAME: error: split point 'nope' is not a node of the model; nodes are: fc1, act, fc2, skip, out, loss
// ORDER: error: split point 'act' must come after the previous split point and after the first node, in program order
// COUNT: error: split-points names 1 nodes, but 3 stages need 2
// VSHAPE: error: placement=v puts two stages on each rank; give virtual-stages=2, not 1
// SCHEDULE: error: unknown schedule 'dualpipe'; use one of gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v
// ZBV: error: schedule=zb-v (the schedule whose in-flight microbatches the memory estimate counts): zb-v needs two stages per rank in V placement (stage s on rank s for s < N, on rank 2N-1-s after), but the package places 4 stages on 2 ranks otherwise; compile with virtual-stages=2 placement=v
// PERRANK: error: split-points makes 3 stages, which is not 2 (virtual-stages) per rank; name 3 split points
// VCOUNT: error: split-points names 1 nodes, but 4 stages need 3
// RATE: error: flop-rate, byte-rate and link-rate must be positive, got 5.000000e+10, 1.000000e+10 and 0.000000e+00

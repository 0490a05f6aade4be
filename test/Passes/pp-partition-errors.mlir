// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=7" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=nope" 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=skip,act" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=3 split-points=act" 2>&1 | FileCheck %s --check-prefix=COUNT

// MANY: error: cannot split 6 nodes into 7 stages: every stage needs at least one node; use at most 6 stages
// NAME: error: split point 'nope' is not a node of the model; nodes are: fc1, act, fc2, skip, out, loss
// ORDER: error: split point 'act' must come after the previous split point and after the first node, in program order
// COUNT: error: split-points names 1 nodes, but 3 stages need 2

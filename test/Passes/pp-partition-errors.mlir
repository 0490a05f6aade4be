// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=7" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=nope" 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="split-points=skip,act" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=3 split-points=act" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not pp-opt %s --pp-partition="stages=2" 2>&1 | FileCheck %s --check-prefix=TIED

// MANY: error: cannot split 6 nodes into 7 stages: every stage needs at least one node; use at most 6 stages
// NAME: error: split point 'nope' is not a node of the model; nodes are: fc1, act, fc2, skip, out, loss
// ORDER: error: split point 'act' must come after the previous split point and after the first node, in program order
// COUNT: error: split-points names 1 nodes, but 3 stages need 2

// A weight shared by nodes that land on different stages.
// TIED: error: parameter 'shared' is used on stages 0 and 1; weights shared across stages (tied embeddings, for example) are not supported yet: place their users on one stage with split-points
func.func @main(%x: tensor<2x2xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2x2xf32> {pp.name = "shared", pp.role = "parameter"}) -> tensor<2x2xf32> {
  %a = nn.matmul %x, %w {pp.node = "first"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %b = nn.matmul %a, %w {pp.node = "second"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %b : tensor<2x2xf32>
}

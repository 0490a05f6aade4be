// RUN: pp-opt %s --pp-recompute -split-input-file -verify-diagnostics
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=some" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute-ops=nn\.softmax" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute-ops=nn\.(tanh" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=selective recompute-ops=nn\.tanh" 2>&1 | FileCheck %s --check-prefix=BOTH

// KIND: error: recompute 'some' is not one of none, full, selective, auto
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition="stages=2 recompute=auto" 2>&1 | FileCheck %s --check-prefix=NOLIMIT
// NOLIMIT: error: recompute=auto recomputes, per stage, as little as memory-limit allows; give memory-limit=BYTES (without a limit nothing needs recomputing), or name a granularity
// NOMATCH: error: recompute-ops 'nn\.softmax' matches no op of the model's forward, whose ops are nn.add, nn.matmul, nn.mse_loss, nn.tanh (a whole name, e.g. 'nn\.(softmax|erf)')
// REGEX: error: recompute-ops 'nn\.(tanh' is not a regular expression:
// BOTH: error: recompute=selective chooses the recomputed ops itself; recompute-ops 'nn\.tanh' would name them instead: drop one of the two

// expected-error @below {{pp-recompute: the program is not partitioned (it has no pp.stage_costs); run pp-partition first}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"})
    -> (tensor<2xf32> {pp.name = "y", pp.role = "output"}) {
  return %x : tensor<2xf32>
}

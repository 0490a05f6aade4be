// RUN: not pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=0" 2>&1 | FileCheck %s --check-prefix=DEGREE
// RUN: not pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=2 zero=4" 2>&1 | FileCheck %s --check-prefix=LEVEL
// RUN: not pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 optimizer-state=-1" 2>&1 | FileCheck %s --check-prefix=STATE
// RUN: not pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 memory-limit=3000 data-parallel=2 zero=3" 2>&1 | FileCheck %s --check-prefix=LIMIT

// DEGREE: error: data-parallel=0 zero=0: the data-parallel degree must be at least 1, not 0
// LEVEL: error: data-parallel=2 zero=4: the ZeRO level must be 0 to 3, not 4
// STATE: error: optimizer-state must be 0 or more bytes per trainable byte, got -1
// The smallest peak names the level it counts.
// LIMIT: error: no partition into 2 stages on 2 ranks fits memory-limit=3000 bytes (0.0 MiB) per rank (parameters, optimizer state, gradients and 2 in-flight microbatches of activations under 1f1b, ZeRO-3 over 2 data-parallel replicas): the smallest achievable peak is 133120 bytes (0.1 MiB)

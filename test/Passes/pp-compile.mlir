// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=3 microbatch-size=2 loss=mse:y split-points=act,skip" 2>/dev/null > %t.compiled
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-attach-loss="loss=mse:y microbatch-size=2" --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-outline-stages --pp-derive-eval 2>/dev/null > %t.passes
// RUN: diff %t.compiled %t.passes
// RUN: FileCheck %s < %t.compiled

// The named pipeline is exactly the six passes in order.
// CHECK-COUNT-3: func.func @stage{{[0-2]}}_forward
// CHECK-COUNT-3: func.func @stage{{[0-2]}}_backward
// CHECK-COUNT-3: func.func @stage{{[0-2]}}_eval

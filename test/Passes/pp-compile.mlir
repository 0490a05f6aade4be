// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=3 microbatch-size=2 loss=mse:y split-points=act,skip" 2>/dev/null > %t.compiled
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-attach-loss="loss=mse:y microbatch-size=2" --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-outline-stages --pp-derive-eval --pp-fuse-elementwise 2>/dev/null > %t.passes
// RUN: diff %t.compiled %t.passes
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=3 microbatch-size=2 loss=mse:y split-points=act,skip fuse=false" 2>/dev/null > %t.unfused
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-attach-loss="loss=mse:y microbatch-size=2" --pp-autodiff --pp-partition="split-points=act,skip" --pp-insert-send-recv --pp-outline-stages --pp-derive-eval 2>/dev/null > %t.six
// RUN: diff %t.unfused %t.six
// RUN: FileCheck %s < %t.compiled

// The named pipeline is exactly the seven passes in order; fuse=false
// leaves out the last, pp-fuse-elementwise.
// CHECK-COUNT-3: func.func @stage{{[0-2]}}_forward
// CHECK-COUNT-3: func.func @stage{{[0-2]}}_backward
// CHECK-COUNT-3: func.func @stage{{[0-2]}}_eval

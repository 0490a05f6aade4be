// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 schedule=gpipe microbatches=4 offload-activations=true" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=GPIPE
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 schedule=1f1b microbatches=2 offload-activations=true" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=SHALLOW
// RUN: not pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 schedule=gpipe microbatches=4 memory-limit=200000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUGGEST
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 schedule=gpipe microbatches=4 memory-limit=200000 offload-activations=true" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=FITS

// With offload-activations the memory model counts what the schedule's
// offload and reload actions leave where the stage functions run: GPipe's
// four microbatches per stage (81920 bytes each) come down to two, the
// reloaded one and the forward running.
// GPIPE: 0 0 fc1 .. fc4 {{.*}} 81920 2 163840
// GPIPE: 1 1 fc5 .. loss {{.*}} 81920 2 163840

// A stage that holds two or fewer offloads nothing: 1F1B over two ranks
// with two microbatches holds two and one.
// SHALLOW: 0 0 fc1 .. fc4 {{.*}} 81920 2 163840
// SHALLOW: 1 1 fc5 .. loss {{.*}} 81920 1 81920

// A limit GPipe's four microbatches in flight miss suggests offload, and
// offload meets it (parameters 4096, gradients 4096, AdamW 8192 and two
// microbatches 163840 per rank: 180224).
// SUGGEST: no partition into 2 stages on 2 ranks fits memory-limit=200000
// SUGGEST-SAME: offload them (offload-activations=true)
// FITS: rank time_us peak_bytes
// FITS-NEXT: 0 {{[0-9.]+}} 180224
// FITS-NEXT: 1 {{[0-9.]+}} 180224

// A forward-only program keeps nothing to offload.
// RUN: not pp-opt %S/Inputs/mlp8-loss.mlir --pp-compile="stages=2 infer=true offload-activations=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INFER
// INFER: error: pp-compile: infer=true keeps no activations to offload; drop offload-activations=

// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-fuse-cross-entropy
// RUN: not pp-opt %pp_src_root/test/Passes/pp-fuse-cross-entropy.mlir --split-input-file --pp-fuse-cross-entropy="chunk-rows=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: pp-fuse-cross-entropy: chunk-rows must be 0 (the pass chooses) or positive, got -1

// expected-error @+1 {{expected the training program as func.func @main}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

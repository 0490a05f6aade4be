// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-emit-package="dir=%t"
// RUN: not pp-opt %s --split-input-file --pp-emit-package 2>&1 | FileCheck %s --check-prefix=NODIR
// NODIR: error: pp-emit-package needs dir=DIRECTORY

// expected-error @+1 {{nothing to package: run --pp-compile (or pp-attach-loss through pp-outline-stages) first}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

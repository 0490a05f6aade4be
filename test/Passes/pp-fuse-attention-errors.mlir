// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-fuse-attention

// expected-error @+1 {{expected the training program as func.func @main}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

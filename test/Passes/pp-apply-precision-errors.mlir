// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-apply-precision=precision=f8

// A compute type pp has no kernels for is refused, naming the ones it has.
// expected-error @+1 {{pp-apply-precision: precision 'f8' is not one of f32, bf16, fp16}}
module {
  func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

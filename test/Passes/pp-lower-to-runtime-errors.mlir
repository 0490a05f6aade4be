// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-lower-to-runtime

// expected-error @+1 {{no stage functions to lower; run pp-outline-stages first}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

func.func @stage0_forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {pp.stage = 0 : i64} {
  // expected-error @+1 {{'nn.gelu' op has no runtime kernel: give it the NN_HasRuntimeKernel trait in its ODS definition and write pp_cpu_/pp_cuda_ kernels (docs/development.md, "Adding an op")}}
  %y = nn.gelu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

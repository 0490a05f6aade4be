// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-lower-to-runtime
// RUN: not pp-opt %s -split-input-file --pp-lower-to-runtime="target=tpu" 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: unknown target 'tpu'; use cpu or cuda

// expected-error @+1 {{no stage functions to lower; run pp-outline-stages first}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

func.func @stage0_forward(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> attributes {pp.stage = 0 : i64} {
  // expected-error @+1 {{'nn.linear' op has no runtime kernel: give it the NN_HasRuntimeKernel trait in its ODS definition and write pp_cpu_/pp_cuda_ kernels (docs/development.md, "Adding an op")}}
  %y = nn.linear %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{stage function @stage0_forward must have a body of one block to be lowered}}
func.func private @stage0_forward(tensor<2xf32>) -> tensor<2xf32> attributes {pp.stage = 0 : i64}

// -----

func.func @stage0_forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {pp.stage = 0 : i64} {
  // expected-error @+1 {{'arith.constant' op of type 'tensor<2x3xi8>' has no runtime form; constants are dense tensors of f32, bf16, f16, f64, i64, i32 or i1}}
  %c = arith.constant dense<1> : tensor<2x3xi8>
  %y = nn.transpose %c permutation = [1, 0] : (tensor<2x3xi8>) -> tensor<3x2xi8>
  return %x : tensor<2x3xf32>
}

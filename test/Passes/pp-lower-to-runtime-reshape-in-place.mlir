// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s
// RUN: pp-opt %s --pp-lower-to-runtime="target=cuda" | FileCheck %s --check-prefix=CUDA

// A reshape whose operand dies at it takes the operand's bytes in the
// arena (the CPU kernel then finds the values in place and copies
// nothing): %r those of %p, %n those of %r, %u those of %t. %q's operand %m
// lives on (the add reads it), so %q gets bytes of its own. Allocations in
// call order: %p, %m, %r, %q, %n, %t, %u, the result %s (-1).
// CHECK-LABEL: func.func @stage0_forward(
// CHECK-SAME: pp.memory_plan = {allocations = array<i64: 64, 0, 64, 64, 64, 0, 64, 128, 64, 0, 64, 192, 64, 192, 64, -1>, arena_bytes = 256 : i64}

// The CUDA runtime serves no memory plan: first fit alone, no tensor takes
// another's bytes while that one lives.
// CUDA-LABEL: func.func @stage0_forward(
// CUDA-SAME: pp.memory_plan = {allocations = array<i64: 64, 0, 64, 64, 64, 128, 64, 0, 64, 192, 64, 128, 64, 64, 64, -1>, arena_bytes = 256 : i64}

func.func @stage0_forward(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>)
    -> tensor<16xf32> attributes {pp.stage = 0 : i64} {
  %p = nn.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = nn.matmul %b, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = nn.reshape %p shape = [16] : (tensor<4x4xf32>) -> tensor<16xf32>
  %q = nn.reshape %m shape = [16] : (tensor<4x4xf32>) -> tensor<16xf32>
  %n = nn.reshape %r shape = [4, 4] : (tensor<16xf32>) -> tensor<4x4xf32>
  %t = nn.add %n, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %u = nn.reshape %t shape = [16] : (tensor<4x4xf32>) -> tensor<16xf32>
  %s = nn.add %u, %q : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %s : tensor<16xf32>
}

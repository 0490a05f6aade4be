// RUN: pp-opt %s --pp-autodiff --pp-partition="stages=2 memory-limit=3000" -split-input-file -verify-diagnostics
// RUN: pp-opt %s --pp-autodiff --pp-partition="stages=2 memory-limit=4352" -o /dev/null --pp-report 2>/dev/null | FileCheck %s

// Two layers of 16x16 f32 weights (1024 bytes; 4096 with gradient and AdamW
// moments): one per rank at least 4096 bytes plus activations, more than
// the limit. The smallest peak the error names fits:
// CHECK: rank time_us peak_bytes
// CHECK-NEXT: 0 {{[0-9.]+}} 4352
// CHECK-NEXT: 1 {{[0-9.]+}} 4352
// expected-error @+1 {{no partition into 2 stages on 2 ranks fits memory-limit=3000 bytes (0.0 MiB) per rank (parameters, optimizer state, gradients and 2 in-flight microbatches of activations under 1f1b): the smallest achievable peak is 4352 bytes (0.0 MiB), per rank 4352, 4352; use more stages, a smaller microbatch or fewer microbatches in flight, recompute activations (recompute=auto or full), or allow at least that much memory}}
func.func @main(%x: tensor<2x16xf32> {pp.name = "x", pp.role = "input"},
                %w1: tensor<16x16xf32> {pp.name = "w1", pp.role = "parameter"},
                %w2: tensor<16x16xf32> {pp.name = "w2", pp.role = "parameter"},
                %t: tensor<2x16xf32> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
    attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}} {
  %h = nn.matmul %x, %w1 transpose_rhs {pp.node = "fc1"} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %y = nn.matmul %h, %w2 transpose_rhs {pp.node = "fc2"} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %l = nn.mse_loss %y, %t reduction<sum> {pp.node = "loss"} : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

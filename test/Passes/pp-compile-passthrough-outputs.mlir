// RUN: pp-opt %s --split-input-file --pp-compile="infer=true" 2>&1 | FileCheck %s
// RUN: not pp-opt %s --split-input-file --pp-compile="stages=2 infer=true" 2>&1 | FileCheck %s --check-prefix=TWO

// A forward-only program without nodes (ONNX Identity, Shape, Constant,
// one-input Max) is one stage: its forward returns the input and the
// constant the model returns.
// CHECK: pp-partition:0:0: remark: stage 0: no nodes (the outputs are inputs or constants)
// CHECK: pp.stage_costs = [{backward_input_us = 0.000000e+00 : f64, backward_weight_us = 0.000000e+00 : f64, boundary = [], bytes = 0.000000e+00 : f64, data_parallel = 1 : i64, estimated_us = 0.000000e+00 : f64, flops = 0.000000e+00 : f64, forward_us = 0.000000e+00 : f64, gradient_bytes = 0.000000e+00 : f64, in_flight = 1 : i64, microbatches = 1 : i64, optimizer_bytes = 0.000000e+00 : f64, parameter_bytes = 0.000000e+00 : f64, parameter_count = 0.000000e+00 : f64, peak_bytes = 0.000000e+00 : f64, rank = 0 : i64, saved_bytes = 0.000000e+00 : f64, schedule = "1f1b", sent_bytes = 0.000000e+00 : f64, zero_level = 0 : i64}]
// CHECK: func.func @stage0_forward(%[[X:.*]]: tensor<2x3xf32> {pp.name = "x", pp.role = "input"})
// CHECK-SAME: -> (tensor<2x3xf32> {pp.name = "y", pp.role = "output"}, tensor<2xi64> {pp.name = "shape", pp.role = "output"})
// CHECK: %[[C:.*]] = arith.constant dense<[2, 3]> : tensor<2xi64>
// CHECK: return %[[X]], %[[C]]
// TWO: error: cannot split 0 nodes into 2 stages: every stage needs at least one node; use at most 1 stages
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"})
    -> (tensor<2x3xf32> {pp.name = "y"}, tensor<2xi64> {pp.name = "shape"}) {
  %shape = arith.constant dense<[2, 3]> : tensor<2xi64>
  return %x, %shape : tensor<2x3xf32>, tensor<2xi64>
}

// -----

// Among nodes, an input the model returns passes through the first stage.
// CHECK: outputs = ["y", "x_out"]
// CHECK: func.func @stage0_forward(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}
// CHECK-SAME: {pp.name = "x_out", pp.role = "output"}
// CHECK: return %{{.*}}, %[[X]]
// TWO: func.func @stage0_forward(
// TWO-SAME: {pp.name = "x_out", pp.role = "output"}
// TWO: func.func @stage1_forward(
// TWO-SAME: {pp.name = "y", pp.role = "output"}
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"})
    -> (tensor<2x3xf32> {pp.name = "y"}, tensor<2x3xf32> {pp.name = "x_out"}) {
  %a = nn.relu %x {pp.node = "a"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = nn.neg %a {pp.node = "b"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %b, %x : tensor<2x3xf32>, tensor<2x3xf32>
}

// What the pipeline passes make of a small MLP (test/Passes/Inputs/mlp.mlir,
// a skip connection from fc1 to the "skip" node) split into two stages:
// every stage and phase is one isolated pp.stage op, values cross stages
// only through named pp.transfer ops, and the backward of stage 1 takes its
// forward's values (and the received "act") as they are. Produced by
//
//   pp-opt test/Passes/Inputs/mlp.mlir --pp-attach-loss="loss=mse:y" \
//     --pp-autodiff --pp-partition="stages=2" --pp-insert-send-recv
//
// and kept equal to that output by test/Tools/pp-opt/example.test.
// pp-outline-stages then turns each pp.stage into @stage<N>_<phase>.
module {
  pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
  func.func @main(%arg0: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}, %arg1: tensor<4x3xf32> {pp.name = "w1", pp.role = "parameter", pp.stage = 0 : i64}, %arg2: tensor<4xf32> {pp.name = "b1", pp.role = "parameter", pp.stage = 0 : i64}, %arg3: tensor<4x4xf32> {pp.name = "w2", pp.role = "parameter", pp.stage = 1 : i64}, %arg4: tensor<3x4xf32> {pp.name = "w3", pp.role = "parameter", pp.stage = 1 : i64}, %arg5: tensor<2x3xf32> {pp.name = "labels", pp.role = "label"}, %arg6: tensor<f32> {pp.name = "loss_scale", pp.role = "loss_scale"}) -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<4x3xf32> {pp.name = "w1", pp.role = "gradient"}, tensor<4xf32> {pp.name = "b1", pp.role = "gradient"}, tensor<4x4xf32> {pp.name = "w2", pp.role = "gradient"}, tensor<3x4xf32> {pp.name = "w3", pp.role = "gradient"}) attributes {pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}, pp.stage_costs = [{backward_input_us = 0.0097599999999999995 : f64, backward_weight_us = 2.608000e-02 : f64, boundary = [{bytes = 3.200000e+01 : f64, name = "fc1"}, {bytes = 3.200000e+01 : f64, name = "act"}], bytes = 5.920000e+02 : f64, data_parallel = 1 : i64, estimated_us = 8.752000e-02 : f64, first_node = "fc1", flops = 1.360000e+02 : f64, forward_us = 2.608000e-02 : f64, gradient_bytes = 6.400000e+01 : f64, in_flight = 2 : i64, last_node = "act", microbatches = 2 : i64, optimizer_bytes = 1.280000e+02 : f64, parameter_bytes = 6.400000e+01 : f64, parameter_count = 1.600000e+01 : f64, peak_bytes = 3.680000e+02 : f64, rank = 0 : i64, saved_bytes = 5.600000e+01 : f64, schedule = "1f1b", sent_bytes = 6.400000e+01 : f64, zero_level = 0 : i64}, {backward_input_us = 3.316000e-02 : f64, backward_weight_us = 0.025439999999999997 : f64, boundary = [], bytes = 9.200000e+02 : f64, data_parallel = 1 : i64, estimated_us = 0.09912 : f64, first_node = "fc2", flops = 3.560000e+02 : f64, forward_us = 4.052000e-02 : f64, gradient_bytes = 1.120000e+02 : f64, in_flight = 1 : i64, last_node = "loss", microbatches = 2 : i64, optimizer_bytes = 2.240000e+02 : f64, parameter_bytes = 1.120000e+02 : f64, parameter_count = 2.800000e+01 : f64, peak_bytes = 5.360000e+02 : f64, rank = 1 : i64, saved_bytes = 8.800000e+01 : f64, schedule = "1f1b", sent_bytes = 0.000000e+00 : f64, zero_level = 0 : i64}]} {
    %0:2 = pp.stage @pipeline stage 0 ins(%arg0, %arg1, %arg2) : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    ^bb0(%arg7: tensor<2x3xf32>, %arg8: tensor<4x3xf32>, %arg9: tensor<4xf32>):
      %6 = nn.matmul %arg7, %arg8 transpose_rhs {pp.node = "fc1"} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
      %7 = nn.add %6, %arg9 {pp.node = "fc1"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      %8 = nn.tanh %7 {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      pp.yield %7, %8 : tensor<2x4xf32>, tensor<2x4xf32>
    }
    %1:2 = pp.transfer @pipeline %0#1, %0#0 from 0 to 1 names ["act", "fc1"] : tensor<2x4xf32>, tensor<2x4xf32>
    %2:3 = pp.stage @pipeline stage 1 ins(%1#0, %arg3, %1#1, %arg4, %arg5) : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<f32>) {
    ^bb0(%arg7: tensor<2x4xf32>, %arg8: tensor<4x4xf32>, %arg9: tensor<2x4xf32>, %arg10: tensor<3x4xf32>, %arg11: tensor<2x3xf32>):
      %6 = nn.matmul %arg7, %arg8 transpose_rhs {pp.node = "fc2"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %7 = nn.add %6, %arg9 {pp.node = "skip"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %8 = nn.matmul %7, %arg10 transpose_rhs {pp.node = "out"} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
      %9 = nn.mse_loss %8, %arg11 reduction<sum> {pp.node = "loss"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
      pp.yield %7, %8, %9 : tensor<2x4xf32>, tensor<2x3xf32>, tensor<f32>
    }
    %3:4 = pp.stage @pipeline stage 1 phase<backward> ins(%arg6, %2#1, %arg5, %arg4, %2#0, %arg3, %1#0) : (tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>) {
    ^bb0(%arg7: tensor<f32>, %arg8: tensor<2x3xf32>, %arg9: tensor<2x3xf32>, %arg10: tensor<3x4xf32>, %arg11: tensor<2x4xf32>, %arg12: tensor<4x4xf32>, %arg13: tensor<2x4xf32>):
      %6 = nn.mse_loss_grad %arg7, %arg8, %arg9 reduction<sum> {pp.node = "loss"} : (tensor<f32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %7 = nn.matmul %6, %arg10 {pp.node = "out"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      %8 = nn.matmul %6, %arg11 transpose_lhs {pp.node = "out"} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
      %9 = nn.matmul %7, %arg12 {pp.node = "fc2"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %10 = nn.matmul %7, %arg13 transpose_lhs {pp.node = "fc2"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
      pp.yield %7, %8, %9, %10 : tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>
    }
    %4:2 = pp.transfer @pipeline %3#2, %3#0 from 1 to 0 names ["fc2.grad", "out.grad"] : tensor<2x4xf32>, tensor<2x4xf32>
    %5:2 = pp.stage @pipeline stage 0 phase<backward> ins(%4#0, %0#1, %4#1, %arg0) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x3xf32>) -> (tensor<4xf32>, tensor<4x3xf32>) {
    ^bb0(%arg7: tensor<2x4xf32>, %arg8: tensor<2x4xf32>, %arg9: tensor<2x4xf32>, %arg10: tensor<2x3xf32>):
      %6 = nn.tanh_grad %arg7, %arg8 {pp.node = "act"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %7 = nn.add %arg9, %6 {pp.node = "fc1"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
      %8 = nn.sum_to %7 shape = [4] {pp.node = "fc1"} : (tensor<2x4xf32>) -> tensor<4xf32>
      %9 = nn.matmul %7, %arg10 transpose_lhs {pp.node = "fc1"} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
      pp.yield %8, %9 : tensor<4xf32>, tensor<4x3xf32>
    }
    return %2#2, %5#1, %5#0, %3#3, %3#1 : tensor<f32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<3x4xf32>
  }
}


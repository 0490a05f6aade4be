// RUN: pp-opt %s -split-input-file --pp-autodiff | FileCheck %s

// A float parameter that reaches the loss only through a cast to an integer
// type (the indices of a gather) or to i1 (the condition of a where) carries
// no gradient: it becomes a constant and gets no gradient result. The table
// and the weight stay parameters; the table's gradient is gather_grad, the
// where sends the gradient to each value where it was taken.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4xf32> {pp.name = "x", pp.role = "input"}
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<4xf32> {pp.name = "ids", pp.role = "constant"}
// CHECK-SAME: %[[TABLE:[^:]*]]: tensor<6x3xf32> {pp.name = "table", pp.role = "parameter"}
// CHECK-SAME: %[[FLAGS:[^:]*]]: tensor<3xf32> {pp.name = "flags", pp.role = "constant"}
// CHECK-SAME: %[[SCALE:[^:]*]]: tensor<f32> {pp.name = "loss_scale", pp.role = "loss_scale"}
// CHECK-SAME: -> (tensor<f32>, tensor<6x3xf32> {pp.name = "table", pp.role = "gradient"})
// CHECK: %[[INDEX:.*]] = nn.cast %[[IDS]] : (tensor<4xf32>) -> tensor<4xi64>
// CHECK: %[[ROWS:.*]] = nn.gather %[[TABLE]], %[[INDEX]] axis = 0
// CHECK: %[[Z:.*]] = nn.matmul %[[X]], %[[ROWS]]
// CHECK: %[[MASK:.*]] = nn.cast %[[FLAGS]] : (tensor<3xf32>) -> tensor<3xi1>
// CHECK: %[[T:.*]] = nn.tanh %[[Z]]
// CHECK: %[[DY:.*]] = nn.mse_loss_grad %[[SCALE]]
// CHECK: %[[ZERO:.*]] = arith.constant {pp.phase = #pp.phase<backward>} dense<0.000000e+00> : tensor<f32>
// CHECK: %[[DZ1:.*]] = nn.where %[[MASK]], %[[DY]], %[[ZERO]] {pp.phase = #pp.phase<backward>} : (tensor<3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK: %[[DT:.*]] = nn.where %[[MASK]], %[[ZERO]], %[[DY]] {pp.phase = #pp.phase<backward>} : (tensor<3xi1>, tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[DZ2:.*]] = nn.tanh_grad %[[DT]], %[[T]]
// CHECK: %[[DZ:.*]] = nn.add %[[DZ1]], %[[DZ2]]
// CHECK: %[[DROWS:.*]] = nn.matmul %[[X]], %[[DZ]] transpose_lhs
// CHECK: %[[DTABLE:.*]] = nn.gather_grad %[[DROWS]], %[[INDEX]] axis = 0 data_shape = [6, 3] {pp.phase = #pp.phase<backward>} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<6x3xf32>
// CHECK-NOT: nn.cast
// CHECK: return %{{.*}}, %[[DTABLE]]
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %ids: tensor<4xf32> {pp.name = "ids", pp.role = "parameter"},
                %table: tensor<6x3xf32> {pp.name = "table", pp.role = "parameter"},
                %flags: tensor<3xf32> {pp.name = "flags", pp.role = "parameter"},
                %t: tensor<2x3xf32> {pp.name = "labels", pp.role = "label"}) -> tensor<f32> {
  %index = nn.cast %ids : (tensor<4xf32>) -> tensor<4xi64>
  %rows = nn.gather %table, %index axis = 0 : (tensor<6x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  %z = nn.matmul %x, %rows : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %mask = nn.cast %flags : (tensor<3xf32>) -> tensor<3xi1>
  %th = nn.tanh %z : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = nn.where %mask, %z, %th : (tensor<3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = nn.mse_loss %y, %t reduction<sum> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A parameter that also reaches the loss through a float path stays a
// parameter: here it is both the data of a gather (differentiable) and,
// cast to i32, its indices (not). A float-to-float cast carries the
// gradient, cast back to the operand's type.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[S:[^:]*]]: tensor<4xf32> {pp.name = "s", pp.role = "parameter"}
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {pp.name = "s", pp.role = "gradient"})
// CHECK: %[[INDEX:.*]] = nn.cast %[[S]] : (tensor<4xf32>) -> tensor<4xi32>
// CHECK: %[[PICKED:.*]] = nn.gather %[[S]], %[[INDEX]] axis = 0
// CHECK: nn.cast %[[PICKED]] : (tensor<4xf32>) -> tensor<4xf64>
// CHECK: %[[DLOSS:.*]] = nn.cast %{{.*}} {pp.phase = #pp.phase<backward>} : (tensor<f32>) -> tensor<f64>
// CHECK: %[[DWIDE:.*]] = nn.mse_loss_grad %[[DLOSS]]
// CHECK: %[[DPICKED:.*]] = nn.cast %[[DWIDE]] {pp.phase = #pp.phase<backward>} : (tensor<4xf64>) -> tensor<4xf32>
// CHECK: %[[DS:.*]] = nn.gather_grad %[[DPICKED]], %[[INDEX]] axis = 0 data_shape = [4]
// CHECK: return %{{.*}}, %[[DS]]
func.func @main(%s: tensor<4xf32> {pp.name = "s", pp.role = "parameter"},
                %t: tensor<4xf64> {pp.name = "labels", pp.role = "label"}) -> tensor<f32> {
  %index = nn.cast %s : (tensor<4xf32>) -> tensor<4xi32>
  %picked = nn.gather %s, %index axis = 0 : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  %wide = nn.cast %picked : (tensor<4xf32>) -> tensor<4xf64>
  %l = nn.mse_loss %wide, %t reduction<sum> : (tensor<4xf64>, tensor<4xf64>) -> tensor<f64>
  %f = nn.cast %l : (tensor<f64>) -> tensor<f32>
  return %f : tensor<f32>
}

// RUN: pp-opt %s --pp-attach-loss="loss=mse:y" | FileCheck %s
// RUN: pp-opt %s --pp-attach-loss="loss=cross_entropy:y microbatch-size=2" | FileCheck %s --check-prefix=CE

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: tensor<2x3xf32> {pp.name = "x", pp.role = "input"}
// CHECK-SAME: %[[W:.*]]: tensor<4x3xf32> {pp.name = "w", pp.role = "parameter"}
// CHECK-SAME: %[[L:.*]]: tensor<2x4xf32> {pp.name = "labels", pp.role = "label"}
// CHECK-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
// CHECK-SAME: pp.loss = {ignore_index = -100 : i64, kind = "mse", output = "y"}
// CHECK: %[[Y:.*]] = nn.relu
// CHECK: %[[LOSS:.*]] = nn.mse_loss %[[Y]], %[[L]] reduction<sum> {pp.node = "loss"}
// CHECK: return %[[LOSS]] : tensor<f32>

// CE: %[[L:arg[0-9]+]]: tensor<2xi64> {pp.name = "labels", pp.role = "label"}
// CE: nn.cross_entropy %{{.*}}, %[[L]] reduction<sum> {pp.node = "loss"}
// CE-SAME: (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x3xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<2x4xf32> {pp.name = "y"}, tensor<2x4xf32> {pp.name = "h"}) {
  %h = nn.matmul %x, %w transpose_rhs {pp.node = "fc"} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %y = nn.relu %h {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y, %h : tensor<2x4xf32>, tensor<2x4xf32>
}


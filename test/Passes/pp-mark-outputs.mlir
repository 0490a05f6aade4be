// RUN: pp-opt %s --pp-mark-outputs="microbatch-size=2" | FileCheck %s
// RUN: pp-opt %s --pp-compile="stages=2 microbatch-size=2 infer=true" 2> /dev/null | FileCheck %s --check-prefix=OUTLINED

// The outputs keep their names (an unnamed one gets output_<i>) and take
// the role "output"; the inputs are recorded in the model's order, the
// unused one included. No loss, labels or backward ops.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<2x4xf32> {pp.name = "y", pp.role = "output"}, tensor<2x4xf32> {pp.name = "output_1", pp.role = "output"})
// CHECK-SAME: pp.forward_only = {inputs = [{name = "x", type = tensor<2x3xf32>}, {name = "unused", type = tensor<2x5xf32>}], outputs = ["y", "output_1"]}
// CHECK-NOT: pp.loss
// CHECK-NOT: nn.relu_grad

// Each output comes from the forward of the stage computing it; there are
// no backward functions.
// OUTLINED: module attributes {pp.forward_only =
// OUTLINED: func.func @stage0_forward(
// OUTLINED-SAME: -> (tensor<2x4xf32> {pp.name = "output_1", pp.role = "output"})
// OUTLINED: func.func @stage1_forward(
// OUTLINED-SAME: -> (tensor<2x4xf32> {pp.name = "y", pp.role = "output"})
// OUTLINED-NOT: backward
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x3xf32> {pp.name = "w", pp.role = "parameter"},
                %u: tensor<2x5xf32> {pp.name = "unused", pp.role = "input"})
    -> (tensor<2x4xf32> {pp.name = "y"}, tensor<2x4xf32>) {
  %h = nn.matmul %x, %w transpose_rhs {pp.node = "fc"} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %y = nn.relu %h {pp.node = "act"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y, %h : tensor<2x4xf32>, tensor<2x4xf32>
}

// RUN: pp-opt %s --pp-attach-loss="loss=mse:y" | FileCheck %s
// RUN: pp-opt %s --pp-attach-loss="loss=mse:y" --canonicalize --pp-autodiff | FileCheck %s --check-prefix=GRAD

// The output the loss does not use, and everything computed only for it, is
// removed; the parameter that fed only it stays an argument.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: {pp.name = "w_aux", pp.role = "parameter"}
// CHECK-NOT: pp.node = "aux"
// CHECK: nn.mse_loss
// CHECK-NEXT: return

// It gets no gradient (PyTorch's None) and no error.
// GRAD-LABEL: func.func @main(
// GRAD-SAME: {pp.name = "w_aux", pp.role = "parameter"}
// GRAD-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<2x3xf32> {pp.name = "w", pp.role = "gradient"})
func.func @main(%x: tensor<2x3xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<2x3xf32> {pp.name = "w", pp.role = "parameter"},
                %w_aux: tensor<2x3xf32> {pp.name = "w_aux", pp.role = "parameter"})
    -> (tensor<2x3xf32> {pp.name = "y"}, tensor<2x3xf32> {pp.name = "aux"}) {
  %y = nn.mul %x, %w {pp.node = "main"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = nn.mul %x, %w_aux {pp.node = "aux"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = nn.tanh %a {pp.node = "aux"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

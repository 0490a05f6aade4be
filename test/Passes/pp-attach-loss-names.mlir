// A model input already called "labels" keeps its name.
// RUN: pp-opt %s --pp-attach-loss="loss=mse:y" | FileCheck %s --check-prefix=TAKEN
// TAKEN-LABEL: func.func @main(
// TAKEN-SAME: {pp.name = "labels", pp.role = "input"}
// TAKEN-SAME: {pp.name = "labels_1", pp.role = "label"}
func.func @main(%x: tensor<2x3xf32> {pp.name = "labels", pp.role = "input"})
    -> (tensor<2x3xf32> {pp.name = "y"}) {
  %y = nn.relu %x {pp.node = "act"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

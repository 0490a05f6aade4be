// RUN: pp-opt %s --pp-apply-precision=precision=bf16 | FileCheck %s
// RUN: pp-opt %s --pp-apply-precision=precision=bf16 --pp-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: pp-opt %s --pp-apply-precision=precision=f32 | FileCheck %s --check-prefix=F32

// Parameters become f32 master copies, cast to bf16 once per node that reads
// them; the input is cast as it arrives, once per node; the matmul and the residual add
// compute in bf16; a scalar constant does not promote the scale to f32 and
// is converted at compile time; layer norm and the loss compute in f32 (the
// layer norm reads the weight's f32 master copy), and the layer norm's result
// is cast back to bf16 for its users; the loss stays f32.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg0]]: tensor<2x4xf32> {pp.name = "x", pp.role = "input"}
// CHECK-SAME: %[[W:arg1]]: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"}
// CHECK-SAME: %[[G:arg2]]: tensor<4xf32> {pp.name = "g", pp.role = "parameter"}
// CHECK-SAME: %[[H:arg3]]: tensor<4x4xf32> {pp.name = "h", pp.role = "parameter"}
// CHECK-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
// CHECK: %[[XB:.*]] = nn.cast %[[X]] {pp.node = "fc"} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK: %[[WB:.*]] = nn.cast %[[W]] {pp.node = "fc"} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
// CHECK: %[[Y:.*]] = nn.matmul %[[XB]], %[[WB]] {pp.node = "fc"} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
// CHECK: %[[HALF:.*]] = arith.constant {pp.node = "half"} dense<5.000000e-01> : tensor<bf16>
// CHECK: %[[S:.*]] = nn.mul %[[Y]], %[[HALF]] {pp.node = "scale"} : (tensor<2x4xbf16>, tensor<bf16>) -> tensor<2x4xbf16>
// CHECK: %[[XR:.*]] = nn.cast %[[X]] {pp.node = "residual"} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK: %[[R:.*]] = nn.add %[[S]], %[[XR]] {pp.node = "residual"} : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
// CHECK-NOT: nn.cast %[[G]]
// CHECK: %[[RF:.*]] = nn.cast %[[R]] {pp.node = "norm"} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// CHECK: %[[N:.*]] = nn.layer_norm %[[RF]], %[[G]] axis = 1 {{.*}} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: %[[NB:.*]] = nn.cast %[[N]] {pp.node = "norm"} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK: %[[HB:.*]] = nn.cast %[[H]] {pp.node = "head"} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
// CHECK: %[[Z:.*]] = nn.matmul %[[NB]], %[[HB]] {pp.node = "head"} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
// CHECK: %[[ZF:.*]] = nn.cast %[[Z]] {pp.node = "loss"} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// CHECK: %[[L:.*]] = nn.cross_entropy %[[ZF]], %{{.*}} reduction<sum> {pp.node = "loss"} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
// CHECK-NEXT: return %[[L]] : tensor<f32>

// Differentiating casts each bf16 gradient back to the f32 master's type;
// the layer norm weight's gradient is f32 throughout.
// GRAD-LABEL: func.func @main(
// GRAD-SAME: -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}, tensor<4x4xf32> {pp.name = "w", pp.role = "gradient"}, tensor<4xf32> {pp.name = "g", pp.role = "gradient"}, tensor<4x4xf32> {pp.name = "h", pp.role = "gradient"})
// GRAD: %[[DH:.*]] = nn.cast %{{.*}} {pp.node = "head", pp.phase = #pp.phase<backward>} : (tensor<4x4xbf16>) -> tensor<4x4xf32>
// GRAD: nn.layer_norm_grad {{.*}} -> (tensor<2x4xf32>, tensor<4xf32>
// GRAD: %[[DW:.*]] = nn.cast %{{.*}} {pp.node = "fc", pp.phase = #pp.phase<backward>} : (tensor<4x4xbf16>) -> tensor<4x4xf32>

// At f32 an f32 model is left as it is.
// F32-NOT: nn.cast
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"},
                %g: tensor<4xf32> {pp.name = "g", pp.role = "parameter"},
                %h: tensor<4x4xf32> {pp.name = "h", pp.role = "parameter"},
                %labels: tensor<2xi64> {pp.name = "labels", pp.role = "label"})
    -> (tensor<f32> {pp.name = "loss", pp.role = "loss"}) {
  %y = nn.matmul %x, %w {pp.node = "fc"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %half = arith.constant {pp.node = "half"} dense<0.5> : tensor<f32>
  %s = nn.mul %y, %half {pp.node = "scale"} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %r = nn.add %s, %x {pp.node = "residual"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %n = nn.layer_norm %r, %g axis = 1 epsilon = 1.0e-05 {pp.node = "norm"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %z = nn.matmul %n, %h {pp.node = "head"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = nn.cross_entropy %z, %labels reduction<sum> {pp.node = "loss"} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

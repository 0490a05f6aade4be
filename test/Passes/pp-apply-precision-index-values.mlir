// RUN: pp-opt %s --pp-apply-precision=precision=bf16 | FileCheck %s
// RUN: pp-opt %s --pp-apply-precision=precision=fp16 | FileCheck %s --check-prefix=F16

// Values computed from integers and constants alone (positions scaled by a
// buffer the model holds, a mask built from an integer input) are computed
// in f32, as the model computes them, and converted to the compute type
// where they meet activations, clamped to its finite range first: the
// mask's finite minimum stays finite (bf16 and f16 would round it to -inf,
// and a row masked everywhere would give NaN). A constant is converted at
// compile time, saturating. (A result without a role, as an imported
// model's, keeps its declared type.)
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg0]]: tensor<2x4xf32>
// CHECK-SAME: %[[POS:arg1]]: tensor<4xi64>
// CHECK-SAME: %[[KEEP:arg2]]: tensor<2x4xi64>
// CHECK-SAME: %[[INV:arg3]]: tensor<1xf32> {pp.name = "inv_freq", pp.role = "constant"}
// CHECK-NOT: nn.cast %[[INV]]
// CHECK: %[[P:.*]] = nn.cast %[[POS]] {pp.node = "rope"} : (tensor<4xi64>) -> tensor<4xf32>
// CHECK: %[[ANGLE:.*]] = nn.mul %[[P]], %[[INV]] {pp.node = "rope"} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
// CHECK: %[[TABLE:.*]] = nn.exp %[[ANGLE]] {pp.node = "rope"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[Y:.*]] = nn.matmul {{.*}} : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
// CHECK: %[[LOW:.*]] = arith.constant {pp.node = "rotate"} dense<-3.38953139E+38> : tensor<f32>
// CHECK: %[[ATLEAST:.*]] = nn.maximum %[[TABLE]], %[[LOW]] {pp.node = "rotate"}
// CHECK: %[[HIGH:.*]] = arith.constant {pp.node = "rotate"} dense<3.38953139E+38> : tensor<f32>
// CHECK: %[[CLAMPED:.*]] = nn.minimum %[[ATLEAST]], %[[HIGH]] {pp.node = "rotate"}
// CHECK: %[[TABLEB:.*]] = nn.cast %[[CLAMPED]] {pp.node = "rotate"} : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK: %[[R:.*]] = nn.mul %[[Y]], %[[TABLEB]] {pp.node = "rotate"} : (tensor<2x4xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16>
// CHECK: %[[K:.*]] = nn.cast %[[KEEP]] {pp.node = "mask"} : (tensor<2x4xi64>) -> tensor<2x4xf32>
// CHECK: %[[DROP:.*]] = nn.sub %{{.*}}, %[[K]] {pp.node = "mask"} : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[BIAS:.*]] = nn.mul %[[DROP]], %{{.*}} {pp.node = "mask"} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK: nn.maximum %[[BIAS]]
// CHECK: %[[BIASB:.*]] = nn.cast %{{.*}} {pp.node = "scores"} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK: %[[S:.*]] = nn.add %[[R]], %[[BIASB]] {pp.node = "scores"} : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
// CHECK: arith.constant {pp.node = "pad"} dense<-3.389530e+38> : tensor<bf16>
// CHECK: nn.add %[[S]], %{{.*}} {pp.node = "pad"} : (tensor<2x4xbf16>, tensor<bf16>) -> tensor<2x4xbf16>

// In f16 the bounds are f16's largest finite numbers.
// F16: arith.constant {pp.node = "rotate"} dense<-6.550400e+04> : tensor<f32>
// F16: arith.constant {pp.node = "rotate"} dense<6.550400e+04> : tensor<f32>
// F16: nn.cast {{.*}} : (tensor<4xf32>) -> tensor<4xf16>
// F16: arith.constant {pp.node = "pad"} dense<-6.550400e+04> : tensor<f16>
func.func @main(%x: tensor<2x4xf32> {pp.name = "x", pp.role = "input"},
                %positions: tensor<4xi64> {pp.name = "positions", pp.role = "input"},
                %keep: tensor<2x4xi64> {pp.name = "keep", pp.role = "input"},
                %inv: tensor<1xf32> {pp.name = "inv_freq", pp.role = "constant"},
                %w: tensor<4x4xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<2x4xf32> {pp.name = "y"}) {
  %p = nn.cast %positions {pp.node = "rope"} : (tensor<4xi64>) -> tensor<4xf32>
  %angle = nn.mul %p, %inv {pp.node = "rope"} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %table = nn.exp %angle {pp.node = "rope"} : (tensor<4xf32>) -> tensor<4xf32>
  %y = nn.matmul %x, %w {pp.node = "fc"} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %r = nn.mul %y, %table {pp.node = "rotate"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %k = nn.cast %keep {pp.node = "mask"} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %one = arith.constant {pp.node = "mask"} dense<1.0> : tensor<f32>
  %drop = nn.sub %one, %k {pp.node = "mask"} : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %min = arith.constant {pp.node = "mask"} dense<-3.40282347E+38> : tensor<f32>
  %bias = nn.mul %drop, %min {pp.node = "mask"} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %s = nn.add %r, %bias {pp.node = "scores"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %pad = arith.constant {pp.node = "pad"} dense<-3.40282347E+38> : tensor<f32>
  %t = nn.add %s, %pad {pp.node = "pad"} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}

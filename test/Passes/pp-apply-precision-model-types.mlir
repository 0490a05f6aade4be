// RUN: pp-opt %s --pp-apply-precision=precision=bf16 | FileCheck %s
// RUN: pp-opt %s --pp-apply-precision=precision=f32 | FileCheck %s --check-prefix=F32

// A model whose weights are bf16 (an HF checkpoint exported in bf16) keeps
// f32 master copies of them. Its own upcast to f32 (a statistic it computes
// in f32 on purpose, as LLaMA's RMSNorm) stays, and so does the cast back;
// a forward-only output keeps the type the model declared.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg0]]: tensor<2x4xbf16>
// CHECK-SAME: %[[W:arg1]]: tensor<4xf32> {pp.model_dtype = bf16, pp.name = "w", pp.role = "parameter"}
// CHECK-SAME: -> (tensor<2x4xbf16> {pp.name = "y", pp.role = "output"})
// CHECK: %[[UP:.*]] = nn.cast %[[X]] {pp.node = "up"} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// CHECK: %[[SQ:.*]] = nn.mul %[[UP]], %[[UP]] {pp.node = "square"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[DOWN:.*]] = nn.cast %[[SQ]] {pp.node = "down"} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK: %[[WB:.*]] = nn.cast %[[W]] {pp.node = "scale"} : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK: %[[Y:.*]] = nn.mul %[[DOWN]], %[[WB]] {pp.node = "scale"} : (tensor<2x4xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16>
// CHECK: return %[[Y]] : tensor<2x4xbf16>

// At f32 the same model computes in f32 (its casts become no-ops and go)
// and hands its output back as bf16, as declared.
// F32-LABEL: func.func @main(
// F32-SAME: %[[X:arg0]]: tensor<2x4xbf16>
// F32-SAME: %[[W:arg1]]: tensor<4xf32> {pp.model_dtype = bf16,
// F32: %[[XF:.*]] = nn.cast %[[X]] {pp.node = "up"} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// F32: %[[SQ:.*]] = nn.mul %[[XF]], %[[XF]] {pp.node = "square"}
// F32: %[[Y:.*]] = nn.mul %[[SQ]], %[[W]] {pp.node = "scale"} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// F32: %[[YB:.*]] = nn.cast %[[Y]] {pp.node = "scale"} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// F32: return %[[YB]] : tensor<2x4xbf16>
func.func @main(%x: tensor<2x4xbf16> {pp.name = "x", pp.role = "input"},
                %w: tensor<4xbf16> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<2x4xbf16> {pp.name = "y", pp.role = "output"}) {
  %up = nn.cast %x {pp.node = "up"} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  %sq = nn.mul %up, %up {pp.node = "square"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %down = nn.cast %sq {pp.node = "down"} : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  %y = nn.mul %down, %w {pp.node = "scale"} : (tensor<2x4xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16>
  return %y : tensor<2x4xbf16>
}

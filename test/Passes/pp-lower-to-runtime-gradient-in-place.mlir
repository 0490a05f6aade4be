// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s
// RUN: pp-opt %s --pp-lower-to-runtime="target=cuda" | FileCheck %s --check-prefix=CUDA

// Saved logits that nothing after it reads: cross_entropy_grad takes them
// from the caller (pp_frame_take_arg) and writes the gradient over them, and
// the reshape of that gradient gives the same tensor its new shape. Neither
// allocates: the memory plan lists the matmul's result alone.
// CHECK-LABEL: func.func @stage0_backward(
// CHECK-SAME: pp.memory_plan = {allocations = array<i64: 48, -1>, arena_bytes = 0 : i64}
// CHECK: %[[SCALE:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F:.*]]) {args = [0 : index, #emitc.opaque<"0">]}
// CHECK: %[[LABELS:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"2">]}
// CHECK: %[[W:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"3">]}
// CHECK: %[[TAKEN:.*]] = emitc.call_opaque "pp_frame_take_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"1">]}
// CHECK: %[[D:.*]] = emitc.call_opaque "pp_cpu_cross_entropy_grad_in_place"(%[[F]], %[[SCALE]], %[[TAKEN]], %[[LABELS]])
// CHECK: %[[FLAT:.*]] = emitc.call_opaque "pp_frame_reshape_owned"(%[[F]], %[[D]]) {args = [0 : index, 1 : index, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{4, 8}.data()">]}
// CHECK: emitc.call_opaque "pp_cpu_matmul"(%[[F]], %[[FLAT]], %[[W]])
// CHECK: emitc.call_opaque "pp_frame_release"(%[[F]], %[[FLAT]])
// CHECK-NOT: pp_frame_release

// CUDA-LABEL: func.func @stage0_backward(
// CUDA: emitc.call_opaque "pp_frame_take_arg"
// CUDA: emitc.call_opaque "pp_cuda_cross_entropy_grad_in_place"
// CUDA: emitc.call_opaque "pp_frame_reshape_owned"

func.func @stage0_backward(
    %scale: tensor<f32> {pp.name = "loss_scale", pp.role = "loss_scale"},
    %logits: tensor<2x2x8xf32> {pp.name = "saved:logits", pp.role = "saved"},
    %labels: tensor<2x2xi64> {pp.name = "labels", pp.role = "label"},
    %w: tensor<8x3xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x3xf32> {pp.name = "saved:h", pp.role = "saved"})
    attributes {pp.stage = 0 : i64} {
  %d = nn.cross_entropy_grad %scale, %logits, %labels reduction<mean> : (tensor<f32>, tensor<2x2x8xf32>, tensor<2x2xi64>) -> tensor<2x2x8xf32>
  %flat = nn.reshape %d shape = [4, 8] : (tensor<2x2x8xf32>) -> tensor<4x8xf32>
  %h = nn.matmul %flat, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}

// Logits read after the gradient (here by the loss), or not saved for this
// function (an input), keep their bytes: the kernel makes the gradient, and
// the reshape copies it.
// CHECK-LABEL: func.func @stage0_read_after(
// CHECK-NOT: pp_frame_take_arg
// CHECK: emitc.call_opaque "pp_cpu_cross_entropy_grad"(
// CHECK-NOT: pp_frame_take_arg
// CHECK: emitc.call_opaque "pp_cpu_reshape"(
// CHECK-NOT: pp_frame_take_arg
// CHECK: emitc.call_opaque "pp_cpu_cross_entropy"(
// CHECK-NOT: pp_frame_take_arg
// CHECK: emitc.call_opaque "pp_cpu_cross_entropy_grad"(
// CHECK-NOT: pp_frame_take_arg
// CHECK: return
func.func @stage0_read_after(
    %scale: tensor<f32> {pp.name = "loss_scale", pp.role = "loss_scale"},
    %logits: tensor<4x8xf32> {pp.name = "saved:logits", pp.role = "saved"},
    %labels: tensor<4xi64> {pp.name = "labels", pp.role = "label"},
    %input: tensor<4x8xf32> {pp.name = "x", pp.role = "input"})
    -> (tensor<32xf32> {pp.name = "saved:d", pp.role = "saved"},
        tensor<f32> {pp.name = "loss", pp.role = "loss"},
        tensor<4x8xf32> {pp.name = "saved:e", pp.role = "saved"})
    attributes {pp.stage = 0 : i64} {
  %d = nn.cross_entropy_grad %scale, %logits, %labels reduction<mean> : (tensor<f32>, tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %flat = nn.reshape %d shape = [32] : (tensor<4x8xf32>) -> tensor<32xf32>
  %loss = nn.cross_entropy %logits, %labels reduction<mean> : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %e = nn.cross_entropy_grad %scale, %input, %labels reduction<mean> : (tensor<f32>, tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  return %flat, %loss, %e : tensor<32xf32>, tensor<f32>, tensor<4x8xf32>
}

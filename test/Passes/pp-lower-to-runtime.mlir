// The kernel calls of unfused ops (pp-lower-to-runtime-fusion.mlir: nn.fusion).
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 loss=mse:y fuse=false" --pp-lower-to-runtime 2>/dev/null | FileCheck %s
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 loss=mse:y fuse=false" --pp-lower-to-runtime="target=cuda" 2>/dev/null | FileCheck %s --check-prefix=CUDA

// Each stage function takes the frame; arguments, kernels, messages and
// results are runtime calls; each tensor is released after its last use.
// CHECK-LABEL: func.func @stage0_forward(
// CHECK-SAME: %[[F:.*]]: !emitc.ptr<!emitc.opaque<"pp_frame">>)
// CHECK: %[[X:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"0">]}
// CHECK: %[[W:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"1">]}
// CHECK: %[[M:.*]] = emitc.call_opaque "pp_cpu_matmul"(%[[F]], %[[X]], %[[W]]) {args = [0 : index, 1 : index, 2 : index, #emitc.opaque<"0">, #emitc.opaque<"1">]}
// CHECK: emitc.call_opaque "pp_cpu_add"
// CHECK: emitc.call_opaque "pp_frame_release"(%[[F]], %[[M]])
// CHECK: emitc.call_opaque "pp_frame_send"(%[[F]], %{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"1">, #emitc.opaque<"\22fc1\22">]}
// CHECK: emitc.call_opaque "pp_frame_result"
// CHECK: return
// CHECK-LABEL: func.func @stage1_forward(
// CHECK: emitc.call_opaque "pp_frame_recv"(%{{.*}}) {args = [0 : index, #emitc.opaque<"0">, #emitc.opaque<"\22fc1\22">, #emitc.opaque<"PP_DTYPE_F32">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{2, 4}.data()">]}
// CHECK: emitc.call_opaque "pp_cpu_mse_loss"({{.*}}) {args = [0 : index, 1 : index, 2 : index, #emitc.opaque<"1">]}
// CHECK-LABEL: func.func @stage0_backward(
// CHECK: %[[DB:.*]] = emitc.call_opaque "pp_cpu_sum_to"({{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"1">, #emitc.opaque<"std::array<int64_t, 1>{4}.data()">]}
// A result is handed over right after its last use (here its definition),
// before the kernels that follow: the runtime adds a gradient to its sum
// and frees it there.
// CHECK: emitc.call_opaque "pp_frame_result"(%[[F:.*]], %[[DB]])
// CHECK: %[[DW:.*]] = emitc.call_opaque "pp_cpu_matmul"
// CHECK: emitc.call_opaque "pp_frame_result"(%[[F]], %[[DW]])

// Every kernel call and message is bracketed for the profile, named by the
// kernel without its prefix, with its category (runtime/pp_kernels.h): a
// matrix product is GEMM, a message communication, any other kernel other;
// the frame's other calls are not bracketed.
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 loss=mse:y fuse=false" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=PROFILE
// PROFILE-LABEL: func.func @stage0_forward(
// PROFILE: emitc.call_opaque "pp_frame_arg"(%{{.*}}) {args = [0 : index, #emitc.opaque<"2">]}
// PROFILE-NEXT: emitc.call_opaque "pp_frame_profile_begin"(%{{.*}}) {args = [0 : index, #emitc.opaque<"\22matmul\22">, #emitc.opaque<"PP_PROFILE_GEMM">]}
// PROFILE-NEXT: emitc.call_opaque "pp_cpu_matmul"
// PROFILE-NEXT: emitc.call_opaque "pp_frame_profile_end"(%{{.*}}) {args = [0 : index]}
// PROFILE-NOT: pp_frame_release
// PROFILE: emitc.call_opaque "pp_frame_profile_begin"(%{{.*}}) {args = [0 : index, #emitc.opaque<"\22add\22">, #emitc.opaque<"PP_PROFILE_OTHER">]}
// PROFILE-NEXT: emitc.call_opaque "pp_cpu_add"
// PROFILE-NEXT: emitc.call_opaque "pp_frame_profile_end"
// PROFILE-NEXT: emitc.call_opaque "pp_frame_release"
// PROFILE: emitc.call_opaque "pp_frame_profile_begin"(%{{.*}}) {args = [0 : index, #emitc.opaque<"\22send\22">, #emitc.opaque<"PP_PROFILE_COMMUNICATION">]}
// PROFILE-NEXT: emitc.call_opaque "pp_frame_send"
// PROFILE-NEXT: emitc.call_opaque "pp_frame_profile_end"
// PROFILE-LABEL: func.func @stage1_forward(
// PROFILE: emitc.call_opaque "pp_frame_profile_begin"(%{{.*}}) {args = [0 : index, #emitc.opaque<"\22recv\22">, #emitc.opaque<"PP_PROFILE_COMMUNICATION">]}
// PROFILE-NEXT: emitc.call_opaque "pp_frame_recv"
// PROFILE-NEXT: emitc.call_opaque "pp_frame_profile_end"

// Attention's kernels (pp-mark-attention), a fused loop of them and their
// gradients' included, are attention; the projections are GEMM.
// RUN: pp-opt %pp_src_root/test/models/causal-attention.mlir --pp-compile="stages=1 microbatch-size=4 loss=cross_entropy:logits" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=ATTENTION
// ATTENTION-LABEL: func.func @stage0_forward(
// ATTENTION: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22matmul\22">, #emitc.opaque<"PP_PROFILE_GEMM">]}
// ATTENTION: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22matmul\22">, #emitc.opaque<"PP_PROFILE_ATTENTION">]}
// ATTENTION: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22fusion\22">, #emitc.opaque<"PP_PROFILE_ATTENTION">]}
// ATTENTION: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22softmax\22">, #emitc.opaque<"PP_PROFILE_ATTENTION">]}
// ATTENTION: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22matmul\22">, #emitc.opaque<"PP_PROFILE_ATTENTION">]}
// ATTENTION: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22tanh\22">, #emitc.opaque<"PP_PROFILE_OTHER">]}
// ATTENTION-LABEL: func.func @stage0_backward(
// ATTENTION: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22softmax_grad\22">, #emitc.opaque<"PP_PROFILE_ATTENTION">]}

// Fused (pp-compile fuse-attention=true), one nn.attention call is attention; its
// gradient's kernel makes the three gradients in one call
// (NN_KernelMakesAllResults): it fills an array, whose elements the code
// then owns, and the memory plan counts them at the call.
// RUN: pp-opt %pp_src_root/test/models/causal-attention.mlir --pp-compile="stages=1 microbatch-size=4 loss=cross_entropy:logits fuse-attention=true" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=FUSED
// FUSED-LABEL: func.func @stage0_forward(
// FUSED: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22attention\22">, #emitc.opaque<"PP_PROFILE_ATTENTION">]}
// FUSED-NEXT: emitc.call_opaque "pp_cpu_attention"({{.*}}) {args = [0 : index, 1 : index, 2 : index, 3 : index, #emitc.opaque<"nullptr">, 4 : index, #emitc.opaque<"0">, #emitc.opaque<"-std::numeric_limits<double>::infinity()">, #emitc.opaque<"0">, #emitc.opaque<"0x1p-1">, #emitc.opaque<"0">]}
// FUSED-NOT: softmax
// FUSED-LABEL: func.func @stage0_backward(
// FUSED: %[[RESULTS:.*]] = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.array<3x!emitc.ptr<!emitc.opaque<"pp_tensor">>>
// FUSED: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22attention_grad\22">, #emitc.opaque<"PP_PROFILE_ATTENTION">]}
// FUSED-NEXT: emitc.call_opaque "pp_cpu_attention_grad"({{.*}}, %[[RESULTS]])
// FUSED: emitc.subscript %[[RESULTS]][%{{.*}}]
// FUSED-NEXT: %[[DQ:.*]] = emitc.load
// FUSED: emitc.subscript %[[RESULTS]][%{{.*}}]
// FUSED-NEXT: emitc.load
// FUSED: emitc.subscript %[[RESULTS]][%{{.*}}]
// FUSED-NEXT: emitc.load
// FUSED-NOT: softmax_grad
// FUSED: pp.memory_plan

// A fused LM head and loss (pp-fuse-cross-entropy): its gradient adds the
// head weight's gradient into the step's sum and returns the hidden
// states'; both calls are profiled as GEMMs.
// RUN: pp-opt %pp_src_root/test/models/causal-attention.mlir --pp-compile="stages=1 microbatch-size=4 loss=cross_entropy:logits fuse-cross-entropy=true" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=HEAD
// HEAD-LABEL: func.func @stage0_forward(
// HEAD: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22linear_cross_entropy\22">, #emitc.opaque<"PP_PROFILE_GEMM">]}
// HEAD-NEXT: emitc.call_opaque "pp_cpu_linear_cross_entropy"({{.*}}) {args = [0 : index, 1 : index, 2 : index, 3 : index, #emitc.opaque<"nullptr">, #emitc.opaque<"4">, #emitc.opaque<"-100">, #emitc.opaque<"1">, #emitc.opaque<"1">]}
// HEAD-NOT: pp_cpu_cross_entropy
// HEAD-LABEL: func.func @stage0_backward(
// HEAD: %[[SUM:.*]] = emitc.call_opaque "pp_frame_gradient_sum"(%{{.*}}) {args = [0 : index, #emitc.opaque<"2">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{6, 8}.data()">]}
// HEAD-NEXT: "pp_frame_profile_begin"({{.*}}#emitc.opaque<"\22linear_cross_entropy_grad_add\22">, #emitc.opaque<"PP_PROFILE_GEMM">]}
// HEAD-NEXT: %[[DH:.*]] = emitc.call_opaque "pp_cpu_linear_cross_entropy_grad_add"(%{{.*}}, %[[SUM]], {{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"nullptr">, 2 : index, 3 : index, 4 : index, 5 : index, #emitc.opaque<"nullptr">, #emitc.opaque<"4">
// HEAD: "pp_frame_gradient_added"(%{{.*}}) {args = [0 : index, #emitc.opaque<"2">]}
// HEAD-NOT: pp_cpu_cross_entropy_grad
// HEAD: pp.memory_plan

// A head with a bias: the kernel adds the weight's and the bias's
// gradients into their sums; a frozen one's sum is NULL (no gradient made).
// RUN: pp-opt %S/Inputs/biased-head.mlir --pp-compile="stages=1 microbatch-size=1 loss=cross_entropy:logits fuse-cross-entropy=true" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=BIAS
// BIAS-LABEL: func.func @stage0_backward(
// BIAS: %[[B:.*]] = emitc.call_opaque "pp_frame_gradient_sum"(%{{.*}}) {args = [0 : index, #emitc.opaque<"2">, #emitc.opaque<"1">, #emitc.opaque<"std::array<int64_t, 1>{6}.data()">]}
// BIAS-NEXT: %[[W:.*]] = emitc.call_opaque "pp_frame_gradient_sum"(%{{.*}}) {args = [0 : index, #emitc.opaque<"1">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{6, 8}.data()">]}
// BIAS: emitc.call_opaque "pp_cpu_linear_cross_entropy_grad_add"(%{{.*}}, %[[W]], %[[B]], {{.*}}) {args = [0 : index, 1 : index, 2 : index, 3 : index, 4 : index, 5 : index, 6 : index, 7 : index, #emitc.opaque<"4">
// BIAS: "pp_frame_gradient_added"(%{{.*}}) {args = [0 : index, #emitc.opaque<"1">]}
// BIAS-NEXT: "pp_frame_gradient_added"(%{{.*}}) {args = [0 : index, #emitc.opaque<"2">]}
// RUN: pp-opt %S/Inputs/biased-head.mlir --pp-compile="stages=1 microbatch-size=1 loss=cross_entropy:logits fuse-cross-entropy=true freeze=b" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=FROZEN-BIAS
// FROZEN-BIAS-LABEL: func.func @stage0_backward(
// FROZEN-BIAS: emitc.call_opaque "pp_cpu_linear_cross_entropy_grad_add"({{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"nullptr">, 2 : index
// RUN: pp-opt %S/Inputs/biased-head.mlir --pp-compile="stages=1 microbatch-size=1 loss=cross_entropy:logits fuse-cross-entropy=true freeze=w" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=FROZEN-WEIGHT
// FROZEN-WEIGHT-LABEL: func.func @stage0_backward(
// FROZEN-WEIGHT: emitc.call_opaque "pp_cpu_linear_cross_entropy_grad_add"({{.*}}) {args = [0 : index, #emitc.opaque<"nullptr">, 1 : index

// CUDA: emitc.call_opaque "pp_cuda_matmul"
// CUDA-NOT: pp_cpu_

// The call comes from the op's definition: operands in order, then the
// inherent attributes sorted by name; an op with several results is called
// once per result with the result's index.
// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s --check-prefix=GENERIC
// GENERIC-LABEL: func.func @stage0_forward(
// GENERIC: emitc.call_opaque "pp_cpu_split"(%{{.*}}, %[[X:.*]]) {args = [0 : index, 1 : index, #emitc.opaque<"1">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{1, 2}.data()">, #emitc.opaque<"0">]}
// GENERIC: emitc.call_opaque "pp_cpu_split"(%{{.*}}, %[[X]]) {args = [0 : index, 1 : index, #emitc.opaque<"1">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{1, 2}.data()">, #emitc.opaque<"1">]}
// GENERIC: emitc.call_opaque "pp_cpu_cross_entropy"({{.*}}) {args = [0 : index, 1 : index, 2 : index, #emitc.opaque<"-100">, #emitc.opaque<"1">]}
func.func @stage0_forward(%x: tensor<2x3xf32>, %y: tensor<2xi64>) -> tensor<f32> attributes {pp.stage = 0 : i64} {
  %a, %b = nn.split %x axis = 1 sizes = [1, 2] : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  %l = nn.cross_entropy %b, %y reduction<sum> : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// An absent optional operand is NULL; a unit flag and an enum are ints, an
// f64 attribute a hexadecimal double.
// GENERIC-LABEL: func.func @stage1_forward(
// GENERIC: emitc.call_opaque "pp_cpu_layer_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {args = [0 : index, 1 : index, 2 : index, #emitc.opaque<"nullptr">, #emitc.opaque<"-1">, #emitc.opaque<"{{.*}}">]}
// GENERIC: emitc.call_opaque "pp_cpu_reduce_mean"({{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"1">, #emitc.opaque<"std::array<int64_t, 1>{1}.data()">, #emitc.opaque<"1">]}
// GENERIC: emitc.call_opaque "pp_cpu_gelu"({{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"1">]}
func.func @stage1_forward(%x: tensor<2x3xf32>, %w: tensor<3xf32>) -> tensor<2x1xf32> attributes {pp.stage = 1 : i64} {
  %n = nn.layer_norm %x, %w axis = -1 epsilon = 1.0e-05 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %m = nn.reduce_mean %n axes = [1] keep_dims : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %g = nn.gelu %m approximate<tanh> : (tensor<2x1xf32>) -> tensor<2x1xf32>
  return %g : tensor<2x1xf32>
}

// Each function carries its memory plan, [bytes, offset] per allocation in
// call order: stage0_forward's matmul result (2x4 f32) at 0; the add's
// (sent as fc1) at 64, since the matmul result is alive during the add;
// tanh's (saved:act) and the copy of the borrowed input x (saved:x) are
// results (-1), which outlive the call.
// RUN: pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 loss=mse:y" --pp-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=PLAN
// PLAN: func.func @stage0_forward({{.*}}) attributes {pp.memory_plan = {allocations = array<i64: 32, 0, 32, 64, 32, -1, 24, -1>, arena_bytes = 128 : i64}

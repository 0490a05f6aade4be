// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s
// RUN: pp-opt %s --pp-lower-to-runtime="target=cuda" | FileCheck %s --check-prefix=CUDA-IR
// RUN: rm -rf %t && pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=1 loss=mse:y" --pp-emit-package="dir=%t compile=false" -o /dev/null 2>/dev/null
// RUN: FileCheck %s --check-prefix=CPP < %t/stages.cpp
// RUN: FileCheck %s --check-prefix=CU < %t/stages.cu

// An nn.fusion is a call of a function generated before the stage function
// (verbatim code), with a local array of its input tensors and one for its
// results, which it owns as a kernel's results; profiled as "fusion".
// CHECK: emitc.verbatim "// nn.fusion of add gelu mul over tensor<4x8xf32>.
// CHECK-SAME: const float x1 = in1[i1 * 1];
// CHECK-SAME: const float v1 = pp::runtime::elementwise::gelu(v0, 1);
// CHECK-SAME: static void fusion_stage0_forward_0(pp_frame *frame, pp_tensor **inputs, pp_tensor **results)
// CHECK-SAME: pp_cpu_empty(frame, PP_DTYPE_F32, 2, shape)
// CHECK-SAME: pp_cpu_parallel_for(4, 8,
// CHECK-LABEL: func.func @stage0_forward
// CHECK: %[[IN:.*]] = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.array<2x!emitc.ptr<!emitc.opaque<"pp_tensor">>>
// CHECK: %[[OUT:.*]] = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.array<2x!emitc.ptr<!emitc.opaque<"pp_tensor">>>
// CHECK: emitc.call_opaque "pp_frame_profile_begin"(%[[F:.*]]) {args = [0 : index, #emitc.opaque<"\22fusion\22">, #emitc.opaque<"PP_PROFILE_OTHER">]}
// CHECK-NEXT: emitc.call_opaque "fusion_stage0_forward_0"(%[[F]], %[[IN]], %[[OUT]])
// CHECK-NEXT: emitc.call_opaque "pp_frame_profile_end"
// Each result is handed over as soon as it is loaded (its last use).
// CHECK: %[[R0:.*]] = emitc.load %{{.*}} : <!emitc.ptr<!emitc.opaque<"pp_tensor">>>
// CHECK-NEXT: emitc.call_opaque "pp_frame_result"(%[[F]], %[[R0]])
// CHECK: %[[R1:.*]] = emitc.load
// CHECK-NEXT: emitc.call_opaque "pp_frame_result"(%[[F]], %[[R1]])

// CUDA-IR: emitc.verbatim "// nn.fusion of add gelu mul over tensor<4x8xf32>.
// CUDA-IR-SAME: static __global__ void fusion_stage0_forward_0_kernel(const float *in0, const float *in1, float *out0, float *out1)
// CUDA-IR-SAME: pp_cuda_empty(frame, PP_DTYPE_F32, 2, shape)
// CUDA-IR-SAME: fusion_stage0_forward_0_kernel<<<1, 256, 0, static_cast<cudaStream_t>(pp_frame_queue_handle(frame))>>>(in0, in1, out0, out1);
// CUDA-IR-SAME: pp_cuda_launched(frame, \22fusion_stage0_forward_0\22)

func.func @stage0_forward(%x: tensor<4x8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {pp.stage = 0 : i64} {
  %0:2 = nn.fusion (%x, %b)
      : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
    %s = nn.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %g = nn.gelu %s approximate<tanh> : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = nn.mul %g, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    nn.yield %s, %m : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// A splat f32 constant input is folded into the loop as its literal (the
// loop has no read of it, and pow by 3 compiles to a product); an infinity,
// which CUDA device code takes no literal of, is read like any input.
// CHECK-LABEL: emitc.verbatim "// nn.fusion of pow add over tensor<4x8xf32>.
// CHECK-SAME: const float x0 = in0[at];
// CHECK-SAME: const float x1 = 0x1.8p+1f;
// CHECK-SAME: const float x2 = in2[0];
// CHECK-SAME: const float v0 = pp::runtime::elementwise::pow(x0, x1);
// CHECK-LABEL: func.func @stage0_cube
func.func @stage0_cube(%x: tensor<4x8xf32>) -> tensor<4x8xf32>
    attributes {pp.stage = 0 : i64} {
  %three = arith.constant dense<3.0> : tensor<f32>
  %inf = arith.constant dense<0x7F800000> : tensor<f32>
  %0 = nn.fusion (%x, %three, %inf)
      : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %e: tensor<f32>, %i: tensor<f32>):
    %p = nn.pow %a, %e : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %s = nn.add %p, %i : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    nn.yield %s : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// The C++ of the MLP's forward fusion (fc1's bias add and tanh; the
// intermediate is also saved for the backward): a loop over rows of the
// last dimension, built for each x86-64 level, the outer indices from the
// row, the bias read by stride, each op's formula once per element; the
// function the stage calls makes the results and runs the rows in chunks
// on the runtime's thread pool.
// CPP: #include "runtime/kernels/ElementwiseFormulas.h"
// CPP-LABEL: // nn.fusion of add tanh over tensor<2x4xf32>.
// CPP-NEXT: PP_CPU_CLONES static void fusion_stage0_forward_0_rows(const float *in0, const float *in1, float *out0, float *out1, int64_t begin, int64_t end) {
// CPP-NEXT: for (int64_t row = begin; row < end; ++row) {
// CPP-NEXT: int64_t rest = row;
// CPP-NEXT: {{\[\[}}maybe_unused]] const int64_t i0 = rest;
// CPP-NEXT: for (int64_t i1 = 0; i1 < 4; ++i1)
// CPP-NEXT: {
// CPP-NEXT: const int64_t at = row * 4 + i1;
// CPP-NEXT: const float x0 = in0[at];
// CPP-NEXT: const float x1 = in1[i1 * 1];
// CPP-NEXT: const float v0 = pp::runtime::elementwise::add(x0, x1);
// CPP-NEXT: const float v1 = pp::runtime::elementwise::tanh(v0);
// CPP-NEXT: out0[at] = v0;
// CPP-NEXT: out1[at] = v1;
// CPP-NEXT: }
// CPP-NEXT: }
// CPP-NEXT: }
// CPP: static void fusion_stage0_forward_0(pp_frame *frame, pp_tensor **inputs, pp_tensor **results) {
// CPP-NEXT: static const int64_t shape[] = {2, 4};
// CPP: results[r] = pp_cpu_empty(frame, PP_DTYPE_F32, 2, shape);
// CPP: float *out1 = static_cast<float *>(pp_tensor_data(results[1]));
// CPP-NEXT: auto rows = [&](int64_t begin, int64_t end) {
// CPP-NEXT: fusion_stage0_forward_0_rows(in0, in1, out0, out1, begin, end);
// CPP-NEXT: };
// CPP-NEXT: pp_cpu_parallel_for(2, 4, [](void *context, int64_t begin, int64_t end) {
// CPP-NEXT: (*static_cast<decltype(rows) *>(context))(begin, end);
// CPP-NEXT: }, &rows);
// CPP-NEXT: }
// A stage function, a straight sequence of runtime calls, compiles
// unoptimized (PP_STAGE_FUNCTION, runtime/pp_kernels.h); its fused loops
// are optimized.
// CPP: PP_STAGE_FUNCTION
// CPP-NEXT: void stage0_forward(pp_frame* [[F:v[0-9]+]]) {
// CPP: pp_frame_profile_begin([[F]], "fusion", PP_PROFILE_OTHER);
// CPP-NEXT: fusion_stage0_forward_0([[F]], [[IN:v[0-9]+]], [[OUT:v[0-9]+]]);
// An equal fusion later in the module (the eval function's is the
// forward's) calls the function the first one defined: the generated code
// has one function per distinct fusion, however often a model repeats it.
// CPP: // nn.fusion of tanh_grad add over tensor<2x4xf32>.
// CPP-NOT: // nn.fusion of add tanh
// CPP: void stage0_eval(pp_frame* [[E:v[0-9]+]]) {
// CPP: fusion_stage0_forward_0([[E]],

// The CUDA twin: one thread per element, its multi-index from the row-major
// index, launched on the default stream and checked.
// CU-LABEL: static __global__ void fusion_stage0_forward_0_kernel(const float *in0, const float *in1, float *out0, float *out1) {
// CU-NEXT: const int64_t at = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
// CU-NEXT: if (at >= 8)
// CU-NEXT: return;
// CU-NEXT: int64_t rest = at;
// CU-NEXT: {{\[\[}}maybe_unused]] const int64_t i1 = rest % 4;
// CU-NEXT: rest /= 4;
// CU-NEXT: {{\[\[}}maybe_unused]] const int64_t i0 = rest;
// CU-NEXT: const float x0 = in0[at];
// CU-NEXT: const float x1 = in1[i1 * 1];
// CU-NEXT: const float v0 = pp::runtime::elementwise::add(x0, x1);
// CU-NEXT: const float v1 = pp::runtime::elementwise::tanh(v0);
// CU: results[r] = pp_cuda_empty(frame, PP_DTYPE_F32, 2, shape);
// CU: fusion_stage0_forward_0_kernel<<<1, 256, 0, static_cast<cudaStream_t>(pp_frame_queue_handle(frame))>>>(in0, in1, out0, out1);
// CU-NEXT: if (!pp_cuda_launched(frame, "fusion_stage0_forward_0")) {
// CUDA's device compiler sees only the kernels: the stage functions are
// host code.
// CU: #ifndef __CUDA_ARCH__
// CU-NEXT: PP_STAGE_FUNCTION
// CU-NEXT: void stage0_forward(
// CU: #endif // __CUDA_ARCH__

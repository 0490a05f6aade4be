// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s
// RUN: pp-opt %s --pp-lower-to-runtime="target=cuda" | FileCheck %s --check-prefix=CUDA

// A gradient result that an f32 nn.gather_grad computes and nothing else
// reads (a token embedding's) is added straight into the step's sum: the
// frame lends the sum, the kernel adds the gathered rows into it, and the
// frame hears that result 0 is in. No table-sized tensor is made, zeroed
// or handed over.
// CHECK-LABEL: func.func @stage0_backward(
// CHECK: %[[G:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F:.*]]) {args = [0 : index, #emitc.opaque<"0">]}
// CHECK: %[[I:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"1">]}
// CHECK: %[[SUM:.*]] = emitc.call_opaque "pp_frame_gradient_sum"(%[[F]]) {args = [0 : index, #emitc.opaque<"0">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{6, 3}.data()">]}
// CHECK: emitc.call_opaque "pp_frame_profile_begin"(%[[F]]) {args = [0 : index, #emitc.opaque<"\22gather_grad_add\22">, #emitc.opaque<"PP_PROFILE_OTHER">]}
// CHECK-NEXT: emitc.call_opaque "pp_cpu_gather_grad_add"(%[[F]], %[[SUM]], %[[G]], %[[I]]) {args = [0 : index, 1 : index, 2 : index, 3 : index, #emitc.opaque<"0">]}
// CHECK-NEXT: emitc.call_opaque "pp_frame_profile_end"
// CHECK-NEXT: emitc.call_opaque "pp_frame_gradient_added"(%[[F]]) {args = [0 : index, #emitc.opaque<"0">]}
// The other gather_grad's result is read again (the sum's add), and the
// last one is no gradient: both are made and handed over as before.
// CHECK: %[[T:.*]] = emitc.call_opaque "pp_cpu_gather_grad"
// CHECK: %[[U:.*]] = emitc.call_opaque "pp_cpu_add"(%[[F]], %[[T]], %[[T]])
// CHECK: emitc.call_opaque "pp_frame_result"(%[[F]], %[[U]]) {args = [0 : index, 1 : index, #emitc.opaque<"1">]}
// CHECK: %[[S:.*]] = emitc.call_opaque "pp_cpu_gather_grad"
// CHECK: emitc.call_opaque "pp_frame_result"(%[[F]], %[[S]]) {args = [0 : index, 1 : index, #emitc.opaque<"2">]}
// A weight's gradient, a product of 2-D f32 matrices, is added into its
// sum by one GEMM of beta 1.
// CHECK: %[[WSUM:.*]] = emitc.call_opaque "pp_frame_gradient_sum"(%[[F]]) {args = [0 : index, #emitc.opaque<"3">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{3, 3}.data()">]}
// CHECK: emitc.call_opaque "pp_cpu_matmul_add"(%[[F]], %[[WSUM]], %[[G]], %[[G]]) {args = [0 : index, 1 : index, 2 : index, 3 : index, #emitc.opaque<"1">, #emitc.opaque<"0">]}
// CHECK: emitc.call_opaque "pp_frame_gradient_added"(%[[F]]) {args = [0 : index, #emitc.opaque<"3">]}
// CHECK-NOT: pp_frame_result
// CHECK: return

// CUDA: emitc.call_opaque "pp_frame_gradient_sum"
// CUDA: emitc.call_opaque "pp_cuda_gather_grad_add"
// CUDA: emitc.call_opaque "pp_frame_gradient_added"
// CUDA: emitc.call_opaque "pp_cuda_matmul_add"

func.func @stage0_backward(%g: tensor<4x3xf32>, %i: tensor<4xi64>)
    -> (tensor<6x3xf32> {pp.name = "table", pp.role = "gradient"},
        tensor<6x3xf32> {pp.name = "other", pp.role = "gradient"},
        tensor<6x3xf32> {pp.name = "saved:rows", pp.role = "saved"},
        tensor<3x3xf32> {pp.name = "weight", pp.role = "gradient"})
    attributes {pp.stage = 0 : i64} {
  %table = nn.gather_grad %g, %i axis = 0 data_shape = [6, 3] : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<6x3xf32>
  %t = nn.gather_grad %g, %i axis = 0 data_shape = [6, 3] : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<6x3xf32>
  %u = nn.add %t, %t : (tensor<6x3xf32>, tensor<6x3xf32>) -> tensor<6x3xf32>
  %s = nn.gather_grad %g, %i axis = 0 data_shape = [6, 3] : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<6x3xf32>
  %w = nn.matmul %g, %g transpose_lhs : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
  return %table, %u, %s, %w : tensor<6x3xf32>, tensor<6x3xf32>, tensor<6x3xf32>, tensor<3x3xf32>
}

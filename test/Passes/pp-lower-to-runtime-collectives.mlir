// The collectives of tensor parallelism lower to kernel calls derived like
// an nn op's, without `mesh` and with their `axes` as a key (the names joined
// by ","): their kernels run over the frame's group of those axes. Their results are allocations of the memory plan, and
// pp-fuse-elementwise leaves them alone (they are not elementwise).
// RUN: pp-opt %s --pp-fuse-elementwise --pp-lower-to-runtime | FileCheck %s
// RUN: pp-opt %s --pp-lower-to-runtime="target=cuda" | FileCheck %s --check-prefix=CUDA

pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @stage0_forward(%table: tensor<16x8xf32>, %tokens: tensor<4xi64>, %labels: tensor<4xi64>)
    -> (tensor<f32>, tensor<2x8xf32>, tensor<16x8xf32>) attributes {pp.stage = 0 : i64} {
  %e = pp.sharded_gather @pipeline %table, %tokens over ["tp"] axis = 0 : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %s = pp.all_reduce @pipeline %e over ["tp"] reduction<sum> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = pp.shard_slice @pipeline %s over ["tp"] dim = 1 blocks = 2 : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %g = pp.all_gather @pipeline %h over ["tp"] dim = 1 blocks = 2 : (tensor<4x4xf32>) -> tensor<4x8xf32>
  %r = pp.reduce_scatter @pipeline %g over ["tp"] dim = 0 reduction<max> : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %z = nn.add %g, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %logits = nn.mul %z, %z : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = pp.sharded_cross_entropy @pipeline %logits, %labels over ["tp"] ignore_index = -1 : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %d = pp.sharded_cross_entropy_grad @pipeline %one, %logits, %labels over ["tp"] : (tensor<f32>, tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %dt = pp.sharded_gather_grad @pipeline %d, %tokens over ["tp"] axis = 0 data_shape = [16, 8] : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<16x8xf32>
  return %l, %r, %dt : tensor<f32>, tensor<2x8xf32>, tensor<16x8xf32>
}

// CHECK-LABEL: func.func @stage0_forward(
// CHECK-SAME: %[[F:.*]]: !emitc.ptr<!emitc.opaque<"pp_frame">>)
// Every result is an allocation of the plan (-1: a result of the function).
// CHECK-SAME: pp.memory_plan = {allocations = array<i64: 128, 0, 128, 128, 64, 0, 128, 256, 64, -1, 128, 0, 4, -1, 4, 128, 128, 192, 512, -1>, arena_bytes = 384 : i64}
// CHECK: %[[TABLE:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"0">]}
// CHECK: %[[TOKENS:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"1">]}
// CHECK: %[[LABELS:.*]] = emitc.call_opaque "pp_frame_arg"(%[[F]]) {args = [0 : index, #emitc.opaque<"2">]}
// CHECK: emitc.call_opaque "pp_frame_profile_begin"(%[[F]]) {args = [0 : index, #emitc.opaque<"\22sharded_gather\22">, #emitc.opaque<"PP_PROFILE_COMMUNICATION">]}
// CHECK: %[[E:.*]] = emitc.call_opaque "pp_cpu_sharded_gather"(%[[F]], %[[TABLE]], %[[TOKENS]]) {args = [0 : index, 1 : index, 2 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"0">]}
// CHECK: %[[S:.*]] = emitc.call_opaque "pp_cpu_all_reduce"(%[[F]], %[[E]]) {args = [0 : index, 1 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"0">]}
// CHECK: emitc.call_opaque "pp_frame_release"(%[[F]], %[[E]])
// axes, blocks, then dim.
// CHECK: %[[H:.*]] = emitc.call_opaque "pp_cpu_shard_slice"(%[[F]], %[[S]]) {args = [0 : index, 1 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"2">, #emitc.opaque<"1">]}
// CHECK: %[[G:.*]] = emitc.call_opaque "pp_cpu_all_gather"(%[[F]], %[[H]]) {args = [0 : index, 1 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"2">, #emitc.opaque<"1">]}
// axes, blocks, dim, then the reduction (1: max).
// CHECK: %[[R:.*]] = emitc.call_opaque "pp_cpu_reduce_scatter"(%[[F]], %[[G]]) {args = [0 : index, 1 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"1">, #emitc.opaque<"0">, #emitc.opaque<"1">]}
// A result is handed over after its last use, here its definition.
// CHECK-NEXT: emitc.call_opaque "pp_frame_profile_end"
// CHECK-NEXT: emitc.call_opaque "pp_frame_result"(%[[F]], %[[R]])
// The elementwise ops around them are fused; the collectives are not.
// CHECK: emitc.call_opaque "fusion_stage0_forward_0"
// CHECK: %[[Z:.*]] = emitc.load
// CHECK: %[[L:.*]] = emitc.call_opaque "pp_cpu_sharded_cross_entropy"(%[[F]], %[[Z]], %[[LABELS]]) {args = [0 : index, 1 : index, 2 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"-1">]}
// CHECK-NEXT: emitc.call_opaque "pp_frame_profile_end"
// CHECK-NEXT: emitc.call_opaque "pp_frame_result"(%[[F]], %[[L]])
// CHECK: %[[ONE:.*]] = emitc.call_opaque "pp_cpu_constant"
// CHECK: %[[D:.*]] = emitc.call_opaque "pp_cpu_sharded_cross_entropy_grad"(%[[F]], %[[ONE]], %[[Z]], %[[LABELS]]) {args = [0 : index, 1 : index, 2 : index, 3 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"-100">]}
// CHECK: %[[DT:.*]] = emitc.call_opaque "pp_cpu_sharded_gather_grad"(%[[F]], %[[D]], %[[TOKENS]]) {args = [0 : index, 1 : index, 2 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"0">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{16, 8}.data()">]}
// CHECK: emitc.call_opaque "pp_frame_result"(%[[F]], %[[DT]])

// CUDA: emitc.call_opaque "pp_cuda_sharded_gather"
// CUDA: emitc.call_opaque "pp_cuda_all_reduce"
// CUDA: emitc.call_opaque "pp_cuda_shard_slice"
// CUDA: emitc.call_opaque "pp_cuda_all_gather"
// CUDA: emitc.call_opaque "pp_cuda_reduce_scatter"
// CUDA: emitc.call_opaque "pp_cuda_sharded_cross_entropy"
// CUDA: emitc.call_opaque "pp_cuda_sharded_cross_entropy_grad"
// CUDA: emitc.call_opaque "pp_cuda_sharded_gather_grad"

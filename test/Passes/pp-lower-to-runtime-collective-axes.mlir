// A collective's kernel call names the mesh axes it spans as one key, the
// axes' names in the IR's order joined by ",": the frame runs it over its
// group of those axes, so collectives over different axes (a context axis,
// a context and a tensor axis together) reach different groups.
// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s
// RUN: pp-opt %s --pp-lower-to-runtime="target=cuda" | FileCheck %s --check-prefix=CUDA

pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"cp" = 2, context>, #pp.axis<"tp" = 2, tensor>]

func.func @stage0_forward(%x: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>) attributes {pp.stage = 0 : i64} {
  %both = pp.all_reduce @pipeline %x over ["cp", "tp"] reduction<sum> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %context = pp.all_reduce @pipeline %x over ["cp"] reduction<max> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %slice = pp.shard_slice @pipeline %x over ["tp"] dim = 1 : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %both, %context, %slice : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>
}

// CHECK: emitc.call_opaque "pp_cpu_all_reduce"(%{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"\22cp,tp\22">, #emitc.opaque<"0">]}
// CHECK: emitc.call_opaque "pp_cpu_all_reduce"(%{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"\22cp\22">, #emitc.opaque<"1">]}
// blocks (1), then dim.
// CHECK: emitc.call_opaque "pp_cpu_shard_slice"(%{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"\22tp\22">, #emitc.opaque<"1">, #emitc.opaque<"1">]}

// CUDA: emitc.call_opaque "pp_cuda_all_reduce"(%{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"\22cp,tp\22">, #emitc.opaque<"0">]}
// CUDA: emitc.call_opaque "pp_cuda_all_reduce"(%{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"\22cp\22">, #emitc.opaque<"1">]}

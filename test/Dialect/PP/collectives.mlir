// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"dp" = 2, data_replicate>,
                #pp.axis<"fsdp" = 2, data_shard>, #pp.axis<"tp" = 4, tensor>]

// CHECK-LABEL: func @collectives
func.func @collectives(%x: tensor<8x16xf32>) {
  // CHECK: pp.all_reduce @world %{{.*}} over ["dp", "fsdp"] reduction<sum> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %0 = pp.all_reduce @world %x over ["dp", "fsdp"] reduction<sum> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: pp.all_reduce @world %{{.*}} over ["tp"] reduction<max>
  %1 = pp.all_reduce @world %0 over ["tp"] reduction<max> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: pp.all_gather @world %{{.*}} over ["tp"] dim = 1 : (tensor<8x16xf32>) -> tensor<8x64xf32>
  %2 = pp.all_gather @world %1 over ["tp"] dim = 1 : (tensor<8x16xf32>) -> tensor<8x64xf32>
  // CHECK: pp.reduce_scatter @world %{{.*}} over ["tp", "fsdp"] dim = 0 reduction<min> : (tensor<8x64xf32>) -> tensor<1x64xf32>
  %3 = pp.reduce_scatter @world %2 over ["tp", "fsdp"] dim = 0 reduction<min> : (tensor<8x64xf32>) -> tensor<1x64xf32>
  return
}

// CHECK-LABEL: func @blocks
func.func @blocks(%x: tensor<4x24xf32>) {
  // CHECK: pp.all_gather @world %{{.*}} over ["tp"] dim = 1 blocks = 3 : (tensor<4x24xf32>) -> tensor<4x96xf32>
  %0 = pp.all_gather @world %x over ["tp"] dim = 1 blocks = 3 : (tensor<4x24xf32>) -> tensor<4x96xf32>
  // CHECK: pp.reduce_scatter @world %{{.*}} over ["tp"] dim = 1 blocks = 3 reduction<sum> : (tensor<4x96xf32>) -> tensor<4x24xf32>
  %1 = pp.reduce_scatter @world %0 over ["tp"] dim = 1 blocks = 3 reduction<sum> : (tensor<4x96xf32>) -> tensor<4x24xf32>
  // CHECK: pp.shard_slice @world %{{.*}} over ["tp"] dim = 1 blocks = 3 : (tensor<4x96xf32>) -> tensor<4x24xf32>
  %2 = pp.shard_slice @world %0 over ["tp"] dim = 1 blocks = 3 : (tensor<4x96xf32>) -> tensor<4x24xf32>
  // The default block count is not printed.
  // CHECK: pp.shard_slice @world %{{.*}} over ["tp"] dim = 0 : (tensor<4x96xf32>) -> tensor<1x96xf32>
  %3 = pp.shard_slice @world %0 over ["tp"] dim = 0 blocks = 1 : (tensor<4x96xf32>) -> tensor<1x96xf32>
  return
}

// CHECK-LABEL: func @vocabulary_parallel
func.func @vocabulary_parallel(%table: tensor<8x16xf32>, %tokens: tensor<2x8xi64>,
                               %logits: tensor<2x8x8xf32>, %loss_grad: tensor<f32>) {
  // CHECK: pp.sharded_gather @world %{{.*}}, %{{.*}} over ["tp"] axis = 0 : (tensor<8x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %e = pp.sharded_gather @world %table, %tokens over ["tp"] axis = 0 : (tensor<8x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  // CHECK: pp.sharded_gather_grad @world %{{.*}}, %{{.*}} over ["tp"] axis = 0 data_shape = [8, 16] : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<8x16xf32>
  %g = pp.sharded_gather_grad @world %e, %tokens over ["tp"] axis = 0 data_shape = [8, 16] : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<8x16xf32>
  // CHECK: pp.sharded_cross_entropy @world %{{.*}}, %{{.*}} over ["tp"] : (tensor<2x8x8xf32>, tensor<2x8xi64>) -> tensor<f32>
  %l = pp.sharded_cross_entropy @world %logits, %tokens over ["tp"] : (tensor<2x8x8xf32>, tensor<2x8xi64>) -> tensor<f32>
  // CHECK: pp.sharded_cross_entropy @world %{{.*}}, %{{.*}} over ["tp"] ignore_index = 0 : (tensor<2x8x8xf32>, tensor<2x8xi64>) -> tensor<f32>
  %m = pp.sharded_cross_entropy @world %logits, %tokens over ["tp"] ignore_index = 0 : (tensor<2x8x8xf32>, tensor<2x8xi64>) -> tensor<f32>
  // CHECK: pp.sharded_cross_entropy_grad @world %{{.*}}, %{{.*}}, %{{.*}} over ["tp"] ignore_index = 7 : (tensor<f32>, tensor<2x8x8xf32>, tensor<2x8xi64>) -> tensor<2x8x8xf32>
  %d = pp.sharded_cross_entropy_grad @world %loss_grad, %logits, %tokens over ["tp"] ignore_index = 7 : (tensor<f32>, tensor<2x8x8xf32>, tensor<2x8xi64>) -> tensor<2x8x8xf32>
  return
}

// CHECK-LABEL: func @shardings
// CHECK-SAME: pp.sharding = #pp.sharding<{{\[}}[], ["tp"]]>
// CHECK-SAME: pp.sharding = #pp.sharding<{{\[}}["tp"], []], blocks = [3, 1]>
// CHECK-SAME: pp.sharding = #pp.sharding<{{\[}}[], []], partial = ["tp"]>
// CHECK-SAME: pp.sharding = #pp.sharding<{{\[}}["dp"], ["tp"]], blocks = [1, 2], partial = ["fsdp"]>
func.func @shardings(%a: tensor<8x16xf32> {pp.sharding = #pp.sharding<[[], ["tp"]]>},
                     %b: tensor<96x32xf32> {pp.sharding = #pp.sharding<[["tp"], []], blocks = [3, 1]>},
                     %c: tensor<8x16xf32> {pp.sharding = #pp.sharding<[[], []], partial = ["tp"]>},
                     %d: tensor<8x16xf32> {pp.sharding = #pp.sharding<[["dp"], ["tp"]], blocks = [1, 2], partial = ["fsdp"]>}) {
  return
}

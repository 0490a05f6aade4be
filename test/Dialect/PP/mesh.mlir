// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK: pp.mesh @world [#pp.axis<"pp" = 4, pipeline>, #pp.axis<"dp_replicate" = 2, data_replicate>, #pp.axis<"dp_shard" = 2, data_shard>, #pp.axis<"tp" = 2, tensor>, #pp.axis<"cp" = 1, context>]
pp.mesh @world [#pp.axis<"pp" = 4, pipeline>,
                #pp.axis<"dp_replicate" = 2, data_replicate>,
                #pp.axis<"dp_shard" = 2, data_shard>,
                #pp.axis<"tp" = 2, tensor>,
                #pp.axis<"cp" = 1, context>]

// Virtual stages: four stages on two ranks in V placement.
// CHECK: pp.mesh @virtual [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 1, 1, 0>}
pp.mesh @virtual [#pp.axis<"pp" = 2, pipeline>] {stage_ranks = array<i64: 0, 1, 1, 0>}

// A mesh without a pipeline axis is pure data/tensor parallelism.
// CHECK: pp.mesh @spmd [#pp.axis<"dp" = 8, data_replicate>]
pp.mesh @spmd [#pp.axis<"dp" = 8, data_replicate>]

// CHECK-LABEL: func @annotated
// CHECK-SAME: pp.placement = #pp.placement<stages = [0, 3]>
// CHECK-SAME: pp.sharding = #pp.sharding<{{\[\[}}], ["tp"]]>
// CHECK-SAME: -> (tensor<4x8xf32> {pp.sharding = #pp.sharding<{{\[\[}}"dp_shard", "tp"], []]>})
func.func @annotated(%embedding: tensor<100x16xf32> {pp.placement = #pp.placement<stages = [0, 3]>},
                     %w: tensor<16x8xf32> {pp.sharding = #pp.sharding<[[], ["tp"]]>})
    -> (tensor<4x8xf32> {pp.sharding = #pp.sharding<[["dp_shard", "tp"], []]>}) {
  %0 = arith.constant dense<0.0> : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// A sharded parameter (a device's shard) keeps the whole initial value.
// CHECK-LABEL: func @sharded_init
// CHECK-SAME: tensor<8x4xf32> {pp.init = dense<1.000000e+00> : tensor<8x8xf32>, pp.sharding = #pp.sharding<{{\[}}[], ["tp"]]>}
// CHECK-SAME: tensor<6x8xf32> {pp.init = dense<2.000000e+00> : tensor<12x8xf32>, pp.sharding = #pp.sharding<{{\[}}["tp"], []], blocks = [3, 1]>}
pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]
func.func @sharded_init(%w: tensor<8x4xf32> {pp.sharding = #pp.sharding<[[], ["tp"]]>, pp.init = dense<1.0> : tensor<8x8xf32>},
                        %qkv: tensor<6x8xf32> {pp.sharding = #pp.sharding<[["tp"], []], blocks = [3, 1]>, pp.init = dense<2.0> : tensor<12x8xf32>}) {
  return
}

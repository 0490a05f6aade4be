// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK: pp.mesh @world [#pp.axis<"pp" = 4, pipeline>, #pp.axis<"dp_replicate" = 2, data_replicate>, #pp.axis<"dp_shard" = 2, data_shard>, #pp.axis<"tp" = 2, tensor>, #pp.axis<"cp" = 1, context>]
pp.mesh @world [#pp.axis<"pp" = 4, pipeline>,
                #pp.axis<"dp_replicate" = 2, data_replicate>,
                #pp.axis<"dp_shard" = 2, data_shard>,
                #pp.axis<"tp" = 2, tensor>,
                #pp.axis<"cp" = 1, context>]

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

// RUN: pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel=tp=2 2>&1 | FileCheck %s

// Seeds: the token embedding and the LM head (vocabulary-parallel), the
// fused QKV projection (column-parallel in 3 blocks: q, k, v) and the MLP's
// first projection (column-parallel). Propagation makes the attention
// output and the MLP's second projection row-parallel and shards the biases
// of column-parallel projections; norms and row-parallel biases stay
// replicated.
// CHECK: remark: pp-shard-tensor-parallel: tp = 2, 8 of 10 parameters sharded
// CHECK: pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"tp" = 2, tensor>]
// CHECK-LABEL: func.func @main(%arg0
// CHECK-SAME: tensor<8x8xf32> {pp.name = "tok.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"], []]>
// CHECK-SAME: tensor<8xf32> {pp.name = "ln.weight", pp.role = "parameter", pp.stage = 0 : i64}
// CHECK-SAME: tensor<12x8xf32> {pp.name = "qkv.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"], []], blocks = [3, 1]>
// CHECK-SAME: tensor<12xf32> {pp.name = "qkv.bias", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"]], blocks = [3]>
// CHECK-SAME: tensor<8x4xf32> {pp.name = "proj.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}], ["tp"]]>
// CHECK-SAME: tensor<8xf32> {pp.name = "proj.bias", pp.role = "parameter", pp.stage = 0 : i64}
// CHECK-SAME: tensor<8x8xf32> {pp.name = "fc.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"], []]>
// CHECK-SAME: tensor<8xf32> {pp.name = "fc.bias", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"]]>
// CHECK-SAME: tensor<8x8xf32> {pp.name = "out.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}], ["tp"]]>
// CHECK-SAME: tensor<8x8xf32> {pp.name = "lm_head.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"], []]>

// Forward: one all-reduce after the embedding, the attention and the MLP;
// the loss never gathers the logits.
// CHECK: pp.stage @pipeline stage 0 ins
// CHECK: %[[E:.*]] = pp.sharded_gather @pipeline %{{.*}}, %{{.*}} over ["tp"] axis = 0 {{.*}} : (tensor<8x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
// CHECK-NEXT: pp.all_reduce @pipeline %[[E]] over ["tp"] reduction<sum>
// CHECK: nn.split {{.*}} sizes = [4, 4, 4] {{.*}}pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"]]>, #pp.sharding<{{\[\[}}], [], ["tp"]]>, #pp.sharding<{{\[\[}}], [], ["tp"]]>]
// CHECK: nn.reshape {{.*}} shape = [2, 4, 1, 4] {{.*}}pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"], []]>]
// CHECK: nn.softmax {{.*}}pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"], [], []]>]
// CHECK: %[[P:.*]] = nn.matmul {{.*}}"proj", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// CHECK-NEXT: pp.all_reduce @pipeline %[[P]] over ["tp"]
// CHECK: nn.gelu {{.*}}pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"]]>]
// CHECK: %[[M:.*]] = nn.matmul {{.*}}"out", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// CHECK-NEXT: pp.all_reduce @pipeline %[[M]] over ["tp"]
// CHECK: %[[L:.*]] = nn.matmul {{.*}}"lm_head", pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"]]>]}
// CHECK-NEXT: pp.sharded_cross_entropy @pipeline %[[L]], %{{.*}} over ["tp"]
// CHECK-NOT: pp.all_gather

// Backward: the matching all-reduce of each input gradient; weight
// gradients come out in their parameters' layouts.
// CHECK: pp.stage @pipeline stage 0 phase<backward>
// CHECK: pp.sharded_cross_entropy_grad @pipeline
// CHECK: %[[DL:.*]] = nn.matmul {{.*}}"lm_head", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// CHECK: nn.matmul {{.*}} transpose_lhs {{.*}}"lm_head", pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]
// CHECK: pp.all_reduce @pipeline %[[DL]] over ["tp"]
// CHECK: nn.sum_to {{.*}}"fc", pp.sharding = [#pp.sharding<{{\[\[}}"tp"]]>]
// CHECK: %[[DF:.*]] = nn.matmul {{.*}}"fc", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// CHECK: pp.all_reduce @pipeline %[[DF]] over ["tp"]
// CHECK: nn.slice_grad {{.*}} input_shape = [2, 4, 12] starts = [0, 0, 4] limits = [2, 4, 8] {{.*}}pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"]], blocks = [1, 1, 3]>]
// CHECK: %[[DQ:.*]] = nn.matmul {{.*}}"qkv", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// CHECK: nn.matmul {{.*}} transpose_lhs {{.*}}"qkv", pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []], blocks = [3, 1]>]
// CHECK: pp.all_reduce @pipeline %[[DQ]] over ["tp"]
// CHECK: pp.sharded_gather_grad @pipeline %{{.*}}, %{{.*}} over ["tp"] axis = 0 data_shape = [8, 8]
// CHECK-NOT: pp.all_gather
// CHECK: return {{.*}} : tensor<f32>, tensor<8x8xf32>, tensor<8xf32>, tensor<12x8xf32>, tensor<12xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>

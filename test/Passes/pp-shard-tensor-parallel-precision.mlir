// RUN: pp-opt %S/Inputs/tp-block.mlir --pp-apply-precision=precision=bf16 --pp-autodiff --pp-recompute-parameter-casts --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel=tp=2 2>&1 | FileCheck %s

// Under bf16 every weight is an f32 master cast to bf16 where it is read
// (pp-apply-precision), and the backward casts it again
// (pp-recompute-parameter-casts). Tensor parallelism lays a cast out as
// the weight it copies, so the block shards what it shards in f32
// (pp-shard-tensor-parallel.mlir): the vocabulary, the column-parallel QKV
// and MLP projections and, chosen by the matmul that reads their casts, the
// row-parallel attention output and MLP projections.
// CHECK: remark: pp-shard-tensor-parallel: tp = 2, 8 of 10 parameters sharded
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

// Forward: each weight's bf16 copy has the weight's layout; one all-reduce
// after the embedding (in bf16: the LayerNorm and the residual both read
// the sum), the attention and the MLP, where f32 has them.
// CHECK: pp.stage @pipeline stage 0 ins
// CHECK: %[[E:.*]] = pp.sharded_gather @pipeline %{{.*}}, %{{.*}} over ["tp"] axis = 0 {{.*}} : (tensor<8x8xbf16>, tensor<2x4xi64>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: pp.all_reduce @pipeline %[[E]] over ["tp"] reduction<sum> {{.*}} : (tensor<2x4x8xbf16>)
// CHECK: %[[QKV:.*]] = nn.cast %{{.*}} {pp.node = "qkv", pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []], blocks = [3, 1]>]} : (tensor<12x8xf32>) -> tensor<12x8xbf16>
// CHECK-NEXT: nn.matmul %{{.*}}, %[[QKV]] transpose_rhs {pp.node = "qkv", pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"]], blocks = [1, 1, 3]>]}
// CHECK: %[[WO:.*]] = nn.cast %{{.*}} {pp.node = "proj", pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]} : (tensor<8x4xf32>) -> tensor<8x4xbf16>
// CHECK-NEXT: %[[P:.*]] = nn.matmul %{{.*}}, %[[WO]] transpose_rhs {pp.node = "proj", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]}
// CHECK: pp.all_reduce @pipeline %[[P]] over ["tp"]
// CHECK: %[[W1:.*]] = nn.cast %{{.*}} {pp.node = "fc", pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK-NEXT: nn.matmul %{{.*}}, %[[W1]] transpose_rhs {pp.node = "fc", pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"]]>]}
// CHECK: %[[W2:.*]] = nn.cast %{{.*}} {pp.node = "out", pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]} : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK-NEXT: %[[M:.*]] = nn.matmul %{{.*}}, %[[W2]] transpose_rhs {pp.node = "out", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]}
// CHECK-NEXT: pp.all_reduce @pipeline %[[M]] over ["tp"]
// CHECK: pp.sharded_cross_entropy @pipeline
// CHECK-NOT: pp.all_gather
// CHECK-NOT: pp.all_reduce

// Backward: the recast weights are sharded too; each weight gradient is
// computed in bf16 in its weight's layout and cast to f32 in it; the
// embedding's gradient is computed sharded (no whole-table gradient
// sliced afterwards).
// CHECK: pp.stage @pipeline stage 0 phase<backward>
// CHECK: %[[G2:.*]] = nn.matmul {{.*}} transpose_lhs {pp.node = "out", pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]}
// CHECK-NEXT: nn.cast %[[G2]] {pp.node = "out", pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]} : (tensor<8x8xbf16>) -> tensor<8x8xf32>
// CHECK: nn.cast %{{.*}} {pp.node = "fc", pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<8x8xf32>) -> tensor<8x8xbf16>
// CHECK: %[[DF:.*]] = nn.matmul {{.*}}"fc", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// CHECK: pp.all_reduce @pipeline %[[DF]] over ["tp"]
// CHECK: nn.cast %{{.*}} {pp.node = "proj", pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]} : (tensor<8x4xf32>) -> tensor<8x4xbf16>
// CHECK: %[[GO:.*]] = nn.matmul {{.*}} transpose_lhs {pp.node = "proj", pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]}
// CHECK-NEXT: nn.cast %[[GO]] {pp.node = "proj", pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]} : (tensor<8x4xbf16>) -> tensor<8x4xf32>
// CHECK: nn.cast %{{.*}} {pp.node = "qkv", pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []], blocks = [3, 1]>]} : (tensor<12x8xf32>) -> tensor<12x8xbf16>
// CHECK: %[[DQ:.*]] = nn.matmul {{.*}}"qkv", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// The input gradient goes to the LayerNorm, which computes in f32, through
// a cast its only reader: the pending sum is summed after it, in f32.
// CHECK: %[[DQ32:.*]] = nn.cast %[[DQ]] {pp.node = "ln", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]} : (tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
// CHECK-NEXT: pp.all_reduce @pipeline %[[DQ32]] over ["tp"] {{.*}} : (tensor<2x4x8xf32>)
// CHECK: %[[GE:.*]] = pp.sharded_gather_grad @pipeline %{{.*}}, %{{.*}} over ["tp"] axis = 0 data_shape = [8, 8]
// CHECK-NEXT: nn.cast %[[GE]] {pp.node = "embed", pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<8x8xbf16>) -> tensor<8x8xf32>
// CHECK-NOT: pp.all_gather
// CHECK-NOT: pp.shard_slice
// CHECK: return {{.*}} : tensor<f32>, tensor<8x8xf32>, tensor<8xf32>, tensor<12x8xf32>, tensor<12xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>

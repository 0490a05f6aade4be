// RUN: pp-opt %S/Inputs/tp-gated-mlp.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel=tp=2 2>/dev/null | FileCheck %s

// A SiLU-gated MLP: the gate and up projections (one input) are seeded
// together as column-parallel; the down projection turns row-parallel.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: tensor<8x8xf32> {pp.name = "gate.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"], []]>
// CHECK-SAME: tensor<8x8xf32> {pp.name = "up.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"], []]>
// CHECK-SAME: tensor<8x8xf32> {pp.name = "down.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}], ["tp"]]>
// CHECK: nn.mul {{.*}}"gated", pp.sharding = [#pp.sharding<{{\[\[}}], [], ["tp"]]>]
// CHECK: %[[D:.*]] = nn.matmul {{.*}}"down", pp.sharding = [#pp.sharding<{{\[\[}}], [], []], partial = ["tp"]>]
// CHECK-NEXT: pp.all_reduce @pipeline %[[D]] over ["tp"]
// CHECK-NOT: pp.all_reduce
// The input x is no parameter: its gradient, the only pending sum of the
// backward, is never computed, so the backward needs no collective.
// CHECK: phase<backward>
// CHECK-NOT: pp.all_reduce
// CHECK-NOT: pp.all_gather
// CHECK: return

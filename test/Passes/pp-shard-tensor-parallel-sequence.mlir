// RUN: pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel="tp=2 sp=true" 2>/dev/null | FileCheck %s

// Sequence parallelism: pending sums are reduce-scattered along the
// sequence (dimension 1), norms and residual adds run on half the
// sequence, and the whole sequence is all-gathered before each
// column-parallel block.
// CHECK: %[[E:.*]] = pp.sharded_gather @pipeline
// CHECK-NEXT: %[[S:.*]] = pp.reduce_scatter @pipeline %[[E]] over ["tp"] dim = 1 reduction<sum> {{.*}} : (tensor<2x4x8xf32>) -> tensor<2x2x8xf32>
// CHECK-NEXT: %[[N:.*]] = nn.layer_norm %[[S]], {{.*}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
// CHECK-NEXT: %[[G:.*]] = pp.all_gather @pipeline %[[N]] over ["tp"] dim = 1 {{.*}} : (tensor<2x2x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: nn.matmul %[[G]]
// CHECK: %[[P:.*]] = nn.matmul {{.*}}"proj"
// CHECK-NEXT: pp.reduce_scatter @pipeline %[[P]] over ["tp"] dim = 1
// CHECK: nn.add {{.*}}"residual"{{.*}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
// CHECK-NEXT: pp.all_gather @pipeline {{.*}} dim = 1 {{.*}}"fc"
// CHECK: %[[M:.*]] = nn.matmul {{.*}}"out"
// CHECK-NEXT: pp.reduce_scatter @pipeline %[[M]] over ["tp"] dim = 1
// CHECK: pp.all_gather @pipeline {{.*}}"lm_head"
// CHECK: pp.sharded_cross_entropy
// The backward: layer-norm and bias gradients summed over the sequence are
// all-reduced once the stage's other work is done.
// CHECK: phase<backward>
// CHECK: pp.reduce_scatter @pipeline {{.*}} dim = 1 {{.*}}"ln"
// CHECK: nn.layer_norm_grad {{.*}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>)
// CHECK: pp.sharded_gather_grad
// CHECK: pp.all_reduce @pipeline {{.*}} : (tensor<8xf32>) -> tensor<8xf32>

// RUN: pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition="split-points=ln,fc" --pp-insert-send-recv --pp-split-backward 2>/dev/null | FileCheck %s
// RUN: pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition="split-points=ln,fc" --pp-insert-send-recv --pp-shard-tensor-parallel=tp=2 --pp-split-backward 2>/dev/null | FileCheck %s --check-prefix=TP

// A GPT block over three stages: embedding | attention | MLP and LM head.
// The attention stage's input half is the chain from the received
// gradients to the gradient it sends: the output projection's input
// gradient, both matmuls of scores and context, the QKV projection's input
// gradient and layer norm's (whose one op also gives the norm's weight
// gradient, a result of the input half). The weight gradients of the
// projections, one matmul each over the batch, are the weight half.
// CHECK-LABEL: pp.stage @pipeline stage 1 phase<backward_input>
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: %[[DR:.*]] = nn.add {{.*}} {pp.node = "residual"}
// CHECK-NEXT: nn.matmul %[[DR]], %{{[^ ]*}} {pp.node = "proj"}
// CHECK-NOT: transpose_lhs {pp.node = "proj"}
// CHECK: nn.matmul {{.*}} transpose_rhs {pp.node = "context"}
// CHECK-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "context"}
// CHECK-NEXT: nn.softmax_grad
// CHECK-NEXT: nn.matmul {{.*}} transpose_rhs {pp.node = "scores"}
// CHECK-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "scores"}
// CHECK-NOT: nn.sum_to
// CHECK: nn.slice_grad {{.*}} starts = [0, 0, 16]
// CHECK-NEXT: %[[DQKV:.*]] = nn.add {{.*}} {pp.node = "split"}
// CHECK-NEXT: nn.matmul %[[DQKV]], %{{[^ ]*}} {pp.node = "qkv"}
// CHECK-NEXT: %[[DX:.*]], %[[DG:.*]], %{{.*}} = nn.layer_norm_grad
// CHECK-NEXT: pp.yield %[[DR]], %[[DX]], %[[DG]], %[[DQKV]]
// CHECK-NEXT: }
// CHECK-NEXT: pp.stage @pipeline stage 1 phase<backward_weight>
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<2x4x24xf32>):
// CHECK-NEXT: nn.sum_to {{.*}} {pp.node = "proj"}
// CHECK-NEXT: nn.reshape
// CHECK-NEXT: nn.reshape
// CHECK-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "proj"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: nn.sum_to {{.*}} {pp.node = "qkv"}
// CHECK-NEXT: nn.reshape
// CHECK-NEXT: nn.reshape
// CHECK-NEXT: nn.matmul {{.*}} transpose_lhs {pp.node = "qkv"} : (tensor<8x24xf32>, tensor<8x8xf32>) -> tensor<24x8xf32>
// CHECK-NEXT: pp.yield
// CHECK-NEXT: }
// CHECK-NEXT: pp.transfer @pipeline %{{.*}}#0, %{{.*}}#1 from 1 to 0 names ["residual.grad", "ln.grad"]

// Tensor parallel (tp=2): the all-reduces of partial input gradients are
// in the input half, which every device of the tensor axis runs alike; the
// weight half needs no collective.
// TP-LABEL: pp.stage @pipeline stage 2 phase<backward_input>
// TP: pp.sharded_cross_entropy_grad
// TP: pp.all_reduce {{.*}} {pp.node = "out"}
// TP: pp.yield
// TP-NEXT: }
// TP-NEXT: pp.stage @pipeline stage 2 phase<backward_weight>
// TP-NOT: pp.all_reduce
// TP: pp.yield
// TP-LABEL: pp.stage @pipeline stage 1 phase<backward_input>
// TP-COUNT-3: pp.all_reduce
// TP: pp.yield
// TP-NEXT: }
// TP-NEXT: pp.stage @pipeline stage 1 phase<backward_weight>
// TP-NOT: pp.all_reduce
// TP: pp.yield
// The sharded embedding's gradient needs no input gradient: weight half.
// TP-LABEL: pp.stage @pipeline stage 0 phase<backward_weight>
// TP: pp.sharded_gather_grad

// RUN: pp-opt %s -split-input-file --pp-shard-tensor-parallel="tp=2 shard=w=0" 2>/dev/null | FileCheck %s

// One program per sharding rule (dialects/nn/IR/NNShardingRules.cpp): a
// parameter `w` sharded along dimension 0 by hand (shard=w=0), the ops under
// test, the layout each gives its result (pp.sharding) and the collectives
// that follow. The stage's output is replicated, so a sharded or pending
// result is gathered or summed before it leaves.


// Elementwise ops keep the sharding; an operand broadcast along the sharded dimension stays whole.
// CHECK-LABEL: func.func @main(
// CHECK: nn.add %{{.*}}, %{{.*}} {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<2x8xf32>) -> tensor<4x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"}, %b: tensor<8xf32> {pp.name = "b", pp.role = "input"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<8xf32>):
    %r = nn.add %p, %q : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// A matmul's M dimension keeps the sharding.
// CHECK-LABEL: func.func @main(
// CHECK: nn.matmul %{{.*}}, %{{.*}} {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<2x8xf32>, tensor<8x2xf32>) -> tensor<2x2xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"}, %b: tensor<8x2xf32> {pp.name = "b", pp.role = "input"})
    -> (tensor<4x2xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w, %b) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<8x2xf32>):
    %r = nn.matmul %p, %q : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    pp.yield %r : tensor<4x2xf32>
  }
  return %0 : tensor<4x2xf32>
}

// -----

// A sharded contraction (K) is a pending sum: the replicated side is sliced, the result all-reduced.
// CHECK-LABEL: func.func @main(
// CHECK: %[[S:.*]] = pp.shard_slice @pipeline %{{.*}} over ["tp"] dim = 1 : (tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK: %[[M:.*]] = nn.matmul %[[S]], %{{.*}} {pp.sharding = [#pp.sharding<{{\[\[}}], []], partial = ["tp"]>]}
// CHECK: pp.all_reduce @pipeline %[[M]] over ["tp"] reduction<sum> : (tensor<2x8xf32>) -> tensor<2x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"}, %b: tensor<2x4xf32> {pp.name = "b", pp.role = "input"})
    -> (tensor<2x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w, %b) : (tensor<4x8xf32>, tensor<2x4xf32>) -> tensor<2x8xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<2x4xf32>):
    %r = nn.matmul %q, %p : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    pp.yield %r : tensor<2x8xf32>
  }
  return %0 : tensor<2x8xf32>
}

// -----

// transpose moves the sharded dimension.
// CHECK-LABEL: func.func @main(
// CHECK: nn.transpose %{{.*}} permutation = [1, 0] {pp.sharding = [#pp.sharding<{{\[\[}}], ["tp"]]>]} : (tensor<2x8xf32>) -> tensor<8x2xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<8x4xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<8x4xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.transpose %p permutation = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    pp.yield %r : tensor<8x4xf32>
  }
  return %0 : tensor<8x4xf32>
}

// -----

// reshape keeps the devices' pieces contiguous in one dimension: merging rows with columns keeps it on the merged dimension.
// CHECK-LABEL: func.func @main(
// CHECK: nn.reshape %{{.*}} shape = [16] {pp.sharding = [#pp.sharding<{{\[\[}}"tp"]]>]} : (tensor<2x8xf32>) -> tensor<16xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<32xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<32xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.reshape %p shape = [32] : (tensor<4x8xf32>) -> tensor<32xf32>
    pp.yield %r : tensor<32xf32>
  }
  return %0 : tensor<32xf32>
}

// -----

// sum_to over the sharded dimension is a pending sum.
// CHECK-LABEL: func.func @main(
// CHECK: %[[S:.*]] = nn.sum_to %{{.*}} shape = [8] {pp.sharding = [#pp.sharding<{{\[\[}}]], partial = ["tp"]>]} : (tensor<2x8xf32>) -> tensor<8xf32>
// CHECK: pp.all_reduce @pipeline %[[S]]
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.sum_to %p shape = [8] : (tensor<4x8xf32>) -> tensor<8xf32>
    pp.yield %r : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}

// -----

// reduce_sum over another dimension keeps the sharding; reduce_mean over the sharded one needs it whole.
// CHECK-LABEL: func.func @main(
// CHECK: %[[S:.*]] = nn.reduce_sum %{{.*}} axes = [1] {pp.sharding = [#pp.sharding<{{\[\[}}"tp"]]>]} : (tensor<2x8xf32>) -> tensor<2xf32>
// CHECK: %[[G:.*]] = pp.all_gather @pipeline %[[S]] over ["tp"] dim = 0 : (tensor<2xf32>) -> tensor<4xf32>
// CHECK: nn.reduce_mean %[[G]] axes = [0] : (tensor<4xf32>) -> tensor<f32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<f32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<f32> {
  ^bb0(%p: tensor<4x8xf32>):
    %s = nn.reduce_sum %p axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %r = nn.reduce_mean %s axes = [0] : (tensor<4xf32>) -> tensor<f32>
    pp.yield %r : tensor<f32>
  }
  return %0 : tensor<f32>
}

// -----

// softmax along another dimension keeps the sharding.
// CHECK-LABEL: func.func @main(
// CHECK: nn.softmax %{{.*}} axis = 1 {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<2x8xf32>) -> tensor<2x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.softmax %p axis = 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// softmax along the sharded dimension needs it whole.
// CHECK-LABEL: func.func @main(
// CHECK: %[[G:.*]] = pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK: nn.softmax %[[G]] axis = 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.softmax %p axis = 0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// concat of equal sharded parts along the sharded dimension makes blocks; split undoes them.
// CHECK-LABEL: func.func @main(
// CHECK: nn.concat %{{.*}}, %{{.*}} axis = 0 {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []], blocks = [2, 1]>]} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK: nn.split %{{.*}} axis = 0 sizes = [2, 2] {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>, #pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %c = nn.concat %p, %p axis = 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %r, %s = nn.split %c axis = 0 sizes = [4, 4] : (tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// slice_grad into one of equal slots along the sharded dimension gives blocks.
// CHECK-LABEL: func.func @main(
// CHECK: nn.slice_grad %{{.*}} input_shape = [6, 8] starts = [2, 0] limits = [4, 8] strides = [1, 1] {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []], blocks = [3, 1]>]} : (tensor<2x8xf32>) -> tensor<6x8xf32>
// CHECK: pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0 blocks = 3 : (tensor<6x8xf32>) -> tensor<12x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<12x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<12x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.slice_grad %p input_shape = [12, 8] starts = [4, 0] limits = [8, 8] strides = [1, 1] : (tensor<4x8xf32>) -> tensor<12x8xf32>
    pp.yield %r : tensor<12x8xf32>
  }
  return %0 : tensor<12x8xf32>
}

// -----

// layer_norm over the other dimension keeps the sharding; its gradient's weight and bias parts are pending sums.
// CHECK-LABEL: func.func @main(
// CHECK: nn.layer_norm %{{.*}}, %{{.*}} axis = 1 epsilon = {{.*}} {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK: nn.layer_norm_grad {{.*}} {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>, #pp.sharding<{{\[\[}}]], partial = ["tp"]>, #pp.sharding<{{\[\[}}]], partial = ["tp"]>]}
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"}, %g: tensor<8xf32> {pp.name = "g", pp.role = "input"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w, %g) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>, %q: tensor<8xf32>):
    %y = nn.layer_norm %p, %q axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r, %dw, %db = nn.layer_norm_grad %y, %p, %q axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// dropout runs on whole tensors (its mask is drawn per global element).
// CHECK-LABEL: func.func @main(
// CHECK: %[[G:.*]] = pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0
// CHECK: nn.dropout %[[G]]
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.dropout %p ratio = 5.000000e-01 key = 7 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// slice of whole blocks along the sharded dimension (a q, k or v part of a
// fused projection) keeps those blocks; a slice across blocks needs the
// dimension whole.
// CHECK-LABEL: func.func @main(
// CHECK: %[[C:.*]] = nn.concat {{.*}} blocks = [2, 1]
// CHECK: nn.slice %[[C]] starts = [2, 0] limits = [4, 8] strides = [1, 1] {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], []]>]} : (tensor<4x8xf32>) -> tensor<2x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %c = nn.concat %p, %p axis = 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %r = nn.slice %c starts = [4, 0] limits = [8, 8] strides = [1, 1] : (tensor<8x8xf32>) -> tensor<4x8xf32>
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// nn.trilu mixes elements only within its trailing matrices: a sharding of a batch dimension flows through.
// CHECK-LABEL: func.func @main(
// CHECK: nn.trilu %{{.*}} diagonal = 0 upper {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], [], []]>]} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
// CHECK: pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<2x8x8xf32>) -> tensor<4x8x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x8x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32> {
  ^bb0(%p: tensor<4x8x8xf32>):
    %r = nn.trilu %p diagonal = 0 upper : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    pp.yield %r : tensor<4x8x8xf32>
  }
  return %0 : tensor<4x8x8xf32>
}

// -----

// Sharded along a row of its matrix, nn.trilu needs the whole matrix first.
// CHECK-LABEL: func.func @main(
// CHECK: %[[G:.*]] = pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: nn.trilu %[[G]] diagonal = 0 upper : (tensor<4x8xf32>) -> tensor<4x8xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x8xf32> {pp.name = "w", pp.role = "parameter"})
    -> (tensor<4x8xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %r = nn.trilu %p diagonal = 0 upper : (tensor<4x8xf32>) -> tensor<4x8xf32>
    pp.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Attention keeps a sharding of its heads: the key and value are sliced
// along them, a mask that spans the heads too, a bias broadcast over them
// stays whole.
// CHECK-LABEL: func.func @main(
// CHECK-DAG: %[[K:.*]] = pp.shard_slice @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<4x2x3xf32>) -> tensor<2x2x3xf32>
// CHECK-DAG: %[[V:.*]] = pp.shard_slice @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<4x3x2xf32>) -> tensor<2x3x2xf32>
// CHECK-DAG: %[[M:.*]] = pp.shard_slice @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<4x3x3xi1>) -> tensor<2x3x3xi1>
// CHECK: nn.attention %{{.*}}, %[[K]], %[[V]] bias %{{.*}} mask %[[M]] scale = 5.000000e-01 fill = 0.000000e+00 {pp.sharding = [#pp.sharding<{{\[\[}}"tp"], [], []]>]} : (tensor<2x3x2xf32>, tensor<2x2x3xf32>, tensor<2x3x2xf32>, tensor<3x3xf32>, tensor<2x3x3xi1>) -> tensor<2x3x2xf32>
// CHECK: pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0 : (tensor<2x3x2xf32>) -> tensor<4x3x2xf32>
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
func.func @main(%w: tensor<4x3x2xf32> {pp.name = "w", pp.role = "parameter"}, %k: tensor<4x2x3xf32> {pp.name = "k", pp.role = "input"},
                %v: tensor<4x3x2xf32> {pp.name = "v", pp.role = "input"}, %b: tensor<3x3xf32> {pp.name = "b", pp.role = "input"},
                %m: tensor<4x3x3xi1> {pp.name = "m", pp.role = "input"})
    -> (tensor<4x3x2xf32> {pp.name = "y", pp.role = "output"}) {
  %0 = pp.stage @pipeline stage 0 ins(%w, %k, %v, %b, %m) : (tensor<4x3x2xf32>, tensor<4x2x3xf32>, tensor<4x3x2xf32>, tensor<3x3xf32>, tensor<4x3x3xi1>) -> tensor<4x3x2xf32> {
  ^bb0(%pq: tensor<4x3x2xf32>, %pk: tensor<4x2x3xf32>, %pv: tensor<4x3x2xf32>, %pb: tensor<3x3xf32>, %pm: tensor<4x3x3xi1>):
    %r = nn.attention %pq, %pk, %pv bias %pb mask %pm scale = 0.5 fill = 0.0 : (tensor<4x3x2xf32>, tensor<4x2x3xf32>, tensor<4x3x2xf32>, tensor<3x3xf32>, tensor<4x3x3xi1>) -> tensor<4x3x2xf32>
    pp.yield %r : tensor<4x3x2xf32>
  }
  return %0 : tensor<4x3x2xf32>
}

// RUN: pp-opt %s --pp-fuse-elementwise | FileCheck %s
// RUN: pp-opt %s --pp-fuse-elementwise | pp-opt --pp-fuse-elementwise | FileCheck %s

// A chain of elementwise ops of one shape becomes one nn.fusion where its
// last op stood; a broadcast operand is an input; an intermediate that is
// also returned is a second result. The op of another shape stays out.
// CHECK-LABEL: func.func @stage0_forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[N:.*]] = nn.neg %[[B]] : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[F:.*]]:2 = nn.fusion (%[[X]], %[[N]]) : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[C:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[S:.*]] = nn.add %[[A]], %[[C]] {pp.node = "fc"}
// CHECK-NEXT: %[[G:.*]] = nn.gelu %[[S]]
// CHECK-NEXT: %[[M:.*]] = nn.mul %[[G]], %[[A]]
// CHECK-NEXT: nn.yield %[[S]], %[[M]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]#0, %[[F]]#1
func.func @stage0_forward(%x: tensor<4x8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {pp.stage = 0 : i64} {
  %n = nn.neg %b : (tensor<8xf32>) -> tensor<8xf32>
  %s = nn.add %x, %n {pp.node = "fc"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = nn.gelu %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = nn.mul %g, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %m : tensor<4x8xf32>, tensor<4x8xf32>
}

// An op joins a group only where the fusion can stand: tanh joins exp (the
// softmax that also reads exp comes later), but the add cannot, since the
// softmax between them reads the group's value and feeds the add. A single
// elementwise op is left as it is.
// CHECK-LABEL: func.func @stage0_backward
// CHECK-NEXT: %[[F:.*]]:2 = nn.fusion (%{{.*}}) : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
// CHECK: nn.exp
// CHECK-NEXT: nn.tanh
// CHECK-NEXT: nn.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]] = nn.softmax %[[F]]#0
// CHECK-NEXT: %[[R:.*]] = nn.add %[[F]]#1, %[[S]]
// CHECK-NEXT: return %[[R]]
func.func @stage0_backward(%x: tensor<2x4xf32>) -> tensor<2x4xf32>
    attributes {pp.stage = 0 : i64} {
  %e = nn.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = nn.tanh %e : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = nn.softmax %e axis = 1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = nn.add %t, %s : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// where's i1 condition and a constant are inputs; gradient ops fuse; the
// i64 add, which the fused loop does not compute, stays out.
// CHECK-LABEL: func.func @stage1_backward
// CHECK: %[[K:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK: nn.fusion (%{{.*}}, %{{.*}}, %{{.*}}, %[[K]]) : (tensor<3xf32>, tensor<3xf32>, tensor<3xi1>, tensor<f32>) -> tensor<3xf32>
// CHECK: nn.relu_grad
// CHECK-NEXT: nn.where
// CHECK-NEXT: nn.mul
// CHECK-NEXT: nn.yield
// CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
func.func @stage1_backward(%c: tensor<3xi1>, %g: tensor<3xf32>, %x: tensor<3xf32>,
                           %i: tensor<3xi64>)
    -> (tensor<3xf32>, tensor<3xi64>) attributes {pp.stage = 1 : i64} {
  %half = arith.constant dense<0.5> : tensor<f32>
  %d = nn.relu_grad %g, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %w = nn.where %c, %d, %x : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %h = nn.mul %w, %half : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %j = nn.add %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %h, %j : tensor<3xf32>, tensor<3xi64>
}

// Only stage functions are fused.
// CHECK-LABEL: func.func @main
// CHECK-NOT: nn.fusion
// CHECK: return
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = nn.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %t = nn.tanh %e : (tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}

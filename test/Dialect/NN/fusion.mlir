// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// An nn.fusion with a broadcast input, an i1 condition and two results
// prints and parses back.
// CHECK-LABEL: func @fusion
// CHECK: %[[R:.*]]:2 = nn.fusion (%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xi1>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[C:.*]]: tensor<4x8xi1>):
// CHECK-NEXT: %[[S:.*]] = nn.add %[[X]], %[[B]]
// CHECK-NEXT: %[[G:.*]] = nn.gelu %[[S]] approximate<tanh>
// CHECK-NEXT: %[[W:.*]] = nn.where %[[C]], %[[G]], %[[X]]
// CHECK-NEXT: nn.yield %[[S]], %[[W]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @fusion(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x8xi1>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0:2 = nn.fusion (%x, %b, %c)
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xi1>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %d: tensor<8xf32>, %e: tensor<4x8xi1>):
    %s = nn.add %a, %d : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %g = nn.gelu %s approximate<tanh> : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %w = nn.where %e, %g, %a
        : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    nn.yield %s, %w : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// A rank-0 fusion of gradient ops with an attribute.
// CHECK-LABEL: func @scalar
// CHECK: nn.fusion (%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: nn.pow_grad %{{.*}}, %{{.*}}, %{{.*}} operand = 1
// CHECK: nn.tanh_grad
func.func @scalar(%g: tensor<f32>, %a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = nn.fusion (%g, %a, %b) : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<f32> {
  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %z: tensor<f32>):
    %p = nn.pow_grad %x, %y, %z operand = 1
        : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %t = nn.tanh_grad %p, %z : (tensor<f32>, tensor<f32>) -> tensor<f32>
    nn.yield %t : tensor<f32>
  }
  return %0 : tensor<f32>
}

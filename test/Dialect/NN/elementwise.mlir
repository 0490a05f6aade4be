// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[A:.*]] = nn.neg %{{.*}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = nn.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[B:.*]] = nn.exp %[[A]]
  %1 = nn.exp %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[C:.*]] = nn.log %[[B]]
  %2 = nn.log %1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[D:.*]] = nn.sqrt %[[C]]
  %3 = nn.sqrt %2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[E:.*]] = nn.rsqrt %[[D]]
  %4 = nn.rsqrt %3 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[F:.*]] = nn.erf %[[E]]
  %5 = nn.erf %4 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[G:.*]] = nn.tanh %[[F]]
  %6 = nn.tanh %5 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[H:.*]] = nn.relu %[[G]]
  %7 = nn.relu %6 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[I:.*]] = nn.sigmoid %[[H]]
  %8 = nn.sigmoid %7 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: %[[J:.*]] = nn.gelu %[[I]] :
  %9 = nn.gelu %8 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.gelu %[[J]] approximate<tanh> :
  %10 = nn.gelu %9 approximate<tanh> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %10 : tensor<4x8xf32>
}

// CHECK-LABEL: func @binary_broadcast
func.func @binary_broadcast(%x: tensor<4x8xf32>, %row: tensor<8xf32>,
                            %col: tensor<4x1xf32>) -> tensor<4x8xf32> {
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = nn.add %x, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.sub %{{.*}}, %{{.*}} : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = nn.sub %col, %row : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.mul
  %2 = nn.mul %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.div
  %3 = nn.div %2, %col : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  // CHECK: nn.pow
  %4 = nn.pow %3, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.maximum
  %5 = nn.maximum %4, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.minimum
  %6 = nn.minimum %5, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// CHECK-LABEL: func @integer_and_dynamic
func.func @integer_and_dynamic(%a: tensor<?x3xi64>, %b: tensor<3xi64>) -> tensor<?x3xi64> {
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<?x3xi64>, tensor<3xi64>) -> tensor<?x3xi64>
  %0 = nn.add %a, %b : (tensor<?x3xi64>, tensor<3xi64>) -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// CHECK-LABEL: func @where
func.func @where(%mask: tensor<4x8xi1>, %x: tensor<4x8xf32>, %zero: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK: nn.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %0 = nn.where %mask, %x, %zero : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// The target is the result type; the generic form shows the `to` attribute
// that the parser derives from it, and parses back to the same op.
// CHECK-LABEL: func @cast
func.func @cast(%x: tensor<2x?xf32>, %m: tensor<4xi1>) -> (tensor<2x?xi64>, tensor<2x?xi1>, tensor<4xf64>, tensor<2x?xf32>, tensor<4xbf16>) {
  // CHECK: %[[I:.*]] = nn.cast %{{.*}} : (tensor<2x?xf32>) -> tensor<2x?xi64>
  // GENERIC: "nn.cast"(%{{.*}}) <{to = 3 : i32}> : (tensor<2x?xf32>) -> tensor<2x?xi64>
  %0 = nn.cast %x : (tensor<2x?xf32>) -> tensor<2x?xi64>
  // CHECK: nn.cast %{{.*}} {pp.node = "mask"} : (tensor<2x?xf32>) -> tensor<2x?xi1>
  %1 = nn.cast %x {pp.node = "mask"} : (tensor<2x?xf32>) -> tensor<2x?xi1>
  // CHECK: nn.cast %{{.*}} : (tensor<4xi1>) -> tensor<4xf64>
  %2 = nn.cast %m : (tensor<4xi1>) -> tensor<4xf64>
  // CHECK: nn.cast %[[I]] : (tensor<2x?xi64>) -> tensor<2x?xf32>
  %3 = nn.cast %0 : (tensor<2x?xi64>) -> tensor<2x?xf32>
  // CHECK: nn.cast %{{.*}} : (tensor<4xf64>) -> tensor<4xbf16>
  %4 = nn.cast %2 : (tensor<4xf64>) -> tensor<4xbf16>
  return %0, %1, %2, %3, %4 : tensor<2x?xi64>, tensor<2x?xi1>, tensor<4xf64>, tensor<2x?xf32>, tensor<4xbf16>
}

// CHECK-LABEL: func @dropout_and_trilu
func.func @dropout_and_trilu(%x: tensor<2x4x4xf32>, %m: tensor<4x4xi1>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x4xi1>) {
  // CHECK: nn.dropout %{{.*}} ratio = 1.000000e-01 key = -7 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %0 = nn.dropout %x ratio = 0.1 key = -7 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  // CHECK: nn.trilu %{{.*}} diagonal = 1 upper : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  // GENERIC: "nn.trilu"(%{{.*}}) <{diagonal = 1 : i64, upper}>
  %1 = nn.trilu %x diagonal = 1 upper : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  // CHECK: nn.trilu %{{.*}} diagonal = 0 : (tensor<4x4xi1>) -> tensor<4x4xi1>
  %2 = nn.trilu %m diagonal = 0 : (tensor<4x4xi1>) -> tensor<4x4xi1>
  return %0, %1, %2 : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x4xi1>
}

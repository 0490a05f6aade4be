// RUN: pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel="tp=2 shard=ln.weight=0" 2>/dev/null | FileCheck %s
// RUN: not pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel="tp=2 shard=nope=0" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel="tp=2 shard=fc.weight=2" 2>&1 | FileCheck %s --check-prefix=DIM
// RUN: not pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel="tp=3 shard=fc.weight=1" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not pp-opt %S/Inputs/tp-block.mlir --pp-autodiff --pp-partition=stages=1 --pp-insert-send-recv --pp-shard-tensor-parallel="tp=2 shard=fc.weight" 2>&1 | FileCheck %s --check-prefix=FORM

// shard=NAME=DIM shards a parameter no pattern would: the layer norm's
// scale is split and gathered where the norm needs it whole.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: tensor<4xf32> {pp.name = "ln.weight", pp.role = "parameter", pp.sharding = #pp.sharding<{{\[\[}}"tp"]]>
// CHECK: %[[W:.*]] = pp.all_gather @pipeline %{{.*}} over ["tp"] dim = 0 {{.*}} : (tensor<4xf32>) -> tensor<8xf32>
// CHECK-NEXT: nn.layer_norm %{{.*}}, %[[W]]

// UNKNOWN: error: pp-shard-tensor-parallel: shard=nope=0: the model has no parameter named 'nope'
// DIM: error: pp-shard-tensor-parallel: shard=fc.weight=2: parameter 'fc.weight' of type 'tensor<16x8xf32>' has no dimension 2
// SIZE: error: pp-shard-tensor-parallel: shard=fc.weight=1: dimension 1 of parameter 'fc.weight' ('tensor<16x8xf32>') has size 8, which tp = 3 does not divide; shard another dimension or use a tp that divides it
// FORM: error: pp-shard-tensor-parallel: shard=fc.weight is not NAME=DIM (a parameter name and a dimension)

// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>, #pp.axis<"tp" = 2, tensor>]

// A forward step split over stages 0 and 3, with a skip connection that
// carries the input past the middle stages in the same transfer.
// CHECK-LABEL: func @two_stages
func.func @two_stages(%x: tensor<4x8xf32>, %w0: tensor<16x8xf32>, %w3: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[H:.*]] = pp.stage @world stage 0 ins(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<16x8xf32>):
  // CHECK-NEXT: %[[Y:.*]] = nn.linear %[[A]], %[[B]]
  // CHECK-NEXT: pp.yield %[[Y]] : tensor<4x16xf32>
  %h = pp.stage @world stage 0 ins(%x, %w0) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>):
    %y = nn.linear %a, %b : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    pp.yield %y : tensor<4x16xf32>
  }
  // CHECK: %[[T:.*]]:2 = pp.transfer @world %[[H]], %{{.*}} from 0 to 3 names ["hidden", "input"] : tensor<4x16xf32>, tensor<4x8xf32>
  %t:2 = pp.transfer @world %h, %x from 0 to 3 names ["hidden", "input"] : tensor<4x16xf32>, tensor<4x8xf32>
  // CHECK: pp.stage @world stage 3 ins(%[[T]]#0, %[[T]]#1, %{{.*}})
  %out = pp.stage @world stage 3 ins(%t#0, %t#1, %w3) : (tensor<4x16xf32>, tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x16xf32>, %skip: tensor<4x8xf32>, %w: tensor<8x16xf32>):
    %y = nn.linear %a, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
    %z = nn.add %y, %skip : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    pp.yield %z : tensor<4x8xf32>
  }
  return %out : tensor<4x8xf32>
}

// CHECK-LABEL: func @phases
func.func @phases(%g: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: pp.stage @world stage 1 phase<backward_input> ins(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = pp.stage @world stage 1 phase<backward_input> ins(%g) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  // CHECK: pp.stage @world stage 1 phase<backward_weight> ins() : () -> () {
  pp.stage @world stage 1 phase<backward_weight> ins() : () -> () {
    pp.yield
  }
  // CHECK: pp.stage @world stage 2 ins(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pp.stage @world stage 2 phase<forward> ins(%0) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    pp.yield %a : tensor<4xf32>
  }
  return %1 : tensor<4xf32>
}

// Each stage as its own program: the same boundary as send and recv.
// CHECK-LABEL: func @stage0
func.func @stage0(%h: tensor<4x16xf32>, %x: tensor<4x8xf32>) {
  // CHECK: pp.send @world %{{.*}}, %{{.*}} to 3 names ["hidden", "input"] : tensor<4x16xf32>, tensor<4x8xf32>
  pp.send @world %h, %x to 3 names ["hidden", "input"] : tensor<4x16xf32>, tensor<4x8xf32>
  return
}

// CHECK-LABEL: func @stage3
func.func @stage3() -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  // CHECK: %{{.*}}:2 = pp.recv @world from 0 names ["hidden", "input"] : tensor<4x16xf32>, tensor<4x8xf32>
  %h, %x = pp.recv @world from 0 names ["hidden", "input"] : tensor<4x16xf32>, tensor<4x8xf32>
  return %h, %x : tensor<4x16xf32>, tensor<4x8xf32>
}

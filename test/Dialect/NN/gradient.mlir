// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

// CHECK-LABEL: func @activation_grads
func.func @activation_grads(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>) {
  // CHECK: nn.relu_grad %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = nn.relu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.sigmoid_grad
  %1 = nn.sigmoid_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.tanh_grad
  %2 = nn.tanh_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} :
  %3 = nn.gelu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.gelu_grad %{{.*}}, %{{.*}} approximate<tanh> :
  %4 = nn.gelu_grad %dy, %x approximate<tanh> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.softmax_grad %{{.*}}, %{{.*}} axis = 1 :
  %5 = nn.softmax_grad %dy, %x axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.log_softmax_grad %{{.*}}, %{{.*}} axis = -1 :
  %6 = nn.log_softmax_grad %dy, %x axis = -1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.sqrt_grad %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = nn.sqrt_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.rsqrt_grad
  %8 = nn.rsqrt_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.erf_grad
  %9 = nn.erf_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// CHECK-LABEL: func @binary_operand_grads
func.func @binary_operand_grads(%dy: tensor<4x8xf32>, %a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // CHECK: nn.pow_grad %{{.*}}, %{{.*}}, %{{.*}} operand = 0 : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = nn.pow_grad %dy, %a, %b operand = 0 : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.maximum_grad %{{.*}}, %{{.*}}, %{{.*}} operand = 1 :
  %1 = nn.maximum_grad %dy, %a, %b operand = 1 : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: nn.minimum_grad %{{.*}}, %{{.*}}, %{{.*}} operand = 0 :
  %2 = nn.minimum_grad %dy, %a, %b operand = 0 : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// CHECK-LABEL: func @reduction_grads
func.func @reduction_grads(%dy: tensor<4xf32>, %dk: tensor<1x4x1xf32>, %x: tensor<2x4x8xf32>, %y: tensor<4xf32>) {
  // CHECK: nn.reduce_sum_grad %{{.*}} axes = [0, -1] input_shape = [2, 4, 8] : (tensor<4xf32>) -> tensor<2x4x8xf32>
  %0 = nn.reduce_sum_grad %dy axes = [0, -1] input_shape = [2, 4, 8] : (tensor<4xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.reduce_sum_grad %{{.*}} axes = [0, 2] input_shape = [2, 4, 8] : (tensor<1x4x1xf32>) -> tensor<2x4x8xf32>
  %1 = nn.reduce_sum_grad %dk axes = [0, 2] input_shape = [2, 4, 8] : (tensor<1x4x1xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.reduce_max_grad %{{.*}}, %{{.*}}, %{{.*}} axes = [0, 2] : (tensor<4xf32>, tensor<2x4x8xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  %2 = nn.reduce_max_grad %dy, %x, %y axes = [0, 2] : (tensor<4xf32>, tensor<2x4x8xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  return
}

// CHECK-LABEL: func @layer_norm_grad
func.func @layer_norm_grad(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %g2: tensor<4x8xf32>) {
  // CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} axis = 2 epsilon = 1.000000e-05 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %0:3 = nn.layer_norm_grad %dy, %x, %g axis = 2 epsilon = 1.0e-05 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: nn.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} axis = -2 epsilon = 1.000000e-05 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %1:3 = nn.layer_norm_grad %dy, %x, %g2 axis = -2 epsilon = 1.0e-05 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// CHECK-LABEL: func @data_movement_grads
func.func @data_movement_grads(%ds: tensor<4x3xf32>, %de: tensor<2x7x16xf32>, %ids: tensor<2x7xi64>) {
  // CHECK: nn.slice_grad %{{.*}} input_shape = [4, 8] starts = [0, 2] limits = [4, 8] strides = [1, 2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
  %0 = nn.slice_grad %ds input_shape = [4, 8] starts = [0, 2] limits = [4, 8] strides = [1, 2] : (tensor<4x3xf32>) -> tensor<4x8xf32>
  // CHECK: nn.gather_grad %{{.*}}, %{{.*}} axis = 0 data_shape = [100, 16] : (tensor<2x7x16xf32>, tensor<2x7xi64>) -> tensor<100x16xf32>
  %1 = nn.gather_grad %de, %ids axis = 0 data_shape = [100, 16] : (tensor<2x7x16xf32>, tensor<2x7xi64>) -> tensor<100x16xf32>
  return
}

// CHECK-LABEL: func @loss_grads
func.func @loss_grads(%g: tensor<f32>, %logits: tensor<8x10xf32>, %labels: tensor<8xi64>,
                      %gn: tensor<8x4xf32>, %y: tensor<8x4xf32>, %t: tensor<8x4xf32>) {
  // CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} reduction<mean> ignore_index = 3 : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64>) -> tensor<8x10xf32>
  %0 = nn.cross_entropy_grad %g, %logits, %labels reduction<mean> ignore_index = 3 : (tensor<f32>, tensor<8x10xf32>, tensor<8xi64>) -> tensor<8x10xf32>
  // CHECK: nn.mse_loss_grad %{{.*}}, %{{.*}}, %{{.*}} reduction<sum> : (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = nn.mse_loss_grad %g, %y, %t reduction<sum> : (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: nn.mse_loss_grad %{{.*}}, %{{.*}}, %{{.*}} reduction<none> : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = nn.mse_loss_grad %gn, %y, %t reduction<none> : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

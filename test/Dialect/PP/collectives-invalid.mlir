// RUN: pp-opt %s -split-input-file -verify-diagnostics

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

// Sequence parallelism over an odd sequence length: rejected, never a hang.
func.func @odd_sequence(%x: tensor<255x16xf32>) {
  // expected-error @+1 {{'pp.reduce_scatter' op dimension 0 of size 255 does not divide evenly over the 2 devices of the group; pad it to a multiple of 2}}
  %0 = pp.reduce_scatter @world %x over ["tp"] dim = 0 reduction<sum> : (tensor<255x16xf32>) -> tensor<127x16xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @unknown_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pp.all_reduce' op mesh @world has no axis "dp"}}
  %0 = pp.all_reduce @world %x over ["dp"] reduction<sum> : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @pipeline_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pp.all_reduce' op cannot run over the pipeline axis "pp"; stages exchange values with pp.transfer}}
  %0 = pp.all_reduce @world %x over ["pp"] reduction<sum> : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @axis_twice(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pp.all_gather' op names mesh axis "tp" twice}}
  %0 = pp.all_gather @world %x over ["tp", "tp"] dim = 0 : (tensor<8xf32>) -> tensor<32xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @no_axes(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pp.all_reduce' op needs at least one mesh axis}}
  %0 = pp.all_reduce @world %x over [] reduction<sum> : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @gather_result(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'pp.all_gather' op result type 'tensor<8x4xf32>' should be 'tensor<8x8xf32>'}}
  %0 = pp.all_gather @world %x over ["tp"] dim = 1 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @gather_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'pp.all_gather' op dim 2 is out of range for 'tensor<8x4xf32>'}}
  %0 = pp.all_gather @world %x over ["tp"] dim = 2 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @all_reduce_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pp.all_reduce' op requires the same type for all operands and results}}
  %0 = pp.all_reduce @world %x over ["tp"] reduction<sum> : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @collective_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pp.reduce_scatter' op @gone does not name a pp.mesh}}
  %0 = pp.reduce_scatter @gone %x over ["tp"] dim = 0 reduction<sum> : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

// A fused QKV projection's 3 blocks must each split over the group.
func.func @blocks_split(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'pp.shard_slice' op dimension 1 of size 8 does not divide evenly over the 2 devices of the group in each of 3 blocks; pad it to a multiple of 6}}
  %0 = pp.shard_slice @world %x over ["tp"] dim = 1 blocks = 3 : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @no_blocks(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'pp.all_gather' op has blocks = 0; a dimension has at least 1 block}}
  %0 = pp.all_gather @world %x over ["tp"] dim = 1 blocks = 0 : (tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @slice_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'pp.shard_slice' op result type 'tensor<4x8xf32>' should be 'tensor<4x4xf32>'}}
  %0 = pp.shard_slice @world %x over ["tp"] dim = 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @gather_indices(%t: tensor<8x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'pp.sharded_gather' op indices must be signless integers, got 'tensor<3xf32>'}}
  %0 = pp.sharded_gather @world %t, %i over ["tp"] axis = 0 : (tensor<8x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_axis(%t: tensor<8x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'pp.sharded_gather' op axis 2 is out of range for 'tensor<8x4xf32>'}}
  %0 = pp.sharded_gather @world %t, %i over ["tp"] axis = 2 : (tensor<8x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_shape(%t: tensor<8x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'pp.sharded_gather' op gathering 'tensor<3xi64>' from 'tensor<8x4xf32>' along axis 1 gives 'f32' of shape [8, 3], not 'tensor<3x4xf32>'}}
  %0 = pp.sharded_gather @world %t, %i over ["tp"] axis = 1 : (tensor<8x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_grad_shape(%g: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'pp.sharded_gather_grad' op result 'tensor<8x4xf32>' does not have data_shape [16, 4]}}
  %0 = pp.sharded_gather_grad @world %g, %i over ["tp"] axis = 0 data_shape = [16, 4] : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<8x4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @gather_grad_mesh(%g: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'pp.sharded_gather_grad' op mesh @world has no axis "sp"}}
  %0 = pp.sharded_gather_grad @world %g, %i over ["sp"] axis = 0 data_shape = [8, 4] : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<8x4xf32>
  return
}

// -----

func.func @loss_logits(%z: tensor<i64>, %y: tensor<i64>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy' op logits must be floats with a class dimension, got 'tensor<i64>'}}
  %0 = pp.sharded_cross_entropy @world %z, %y over ["tp"] : (tensor<i64>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @loss_labels(%z: tensor<2x8xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy' op labels 'tensor<8xi64>' must be integers shaped like the logits without their class dimension ('tensor<2x8xf32>')}}
  %0 = pp.sharded_cross_entropy @world %z, %y over ["tp"] : (tensor<2x8xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_result(%z: tensor<2x8xf32>, %y: tensor<2xi64>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy' op returns the summed loss as 'tensor<f32>', not 'tensor<2xf32>'}}
  %0 = pp.sharded_cross_entropy @world %z, %y over ["tp"] : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @loss_mesh(%z: tensor<2x8xf32>, %y: tensor<2xi64>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy' op cannot run over the pipeline axis "pp"; stages exchange values with pp.transfer}}
  %0 = pp.sharded_cross_entropy @world %z, %y over ["pp"] : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_grad_scalar(%g: tensor<2xf32>, %z: tensor<2x8xf32>, %y: tensor<2xi64>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy_grad' op takes the gradient of the summed loss as 'tensor<f32>', not 'tensor<2xf32>'}}
  %0 = pp.sharded_cross_entropy_grad @world %g, %z, %y over ["tp"] : (tensor<2xf32>, tensor<2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return
}

// -----

func.func @loss_grad_labels(%g: tensor<f32>, %z: tensor<2x8xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy_grad' op labels 'tensor<2xf32>' must be integers shaped like the logits}}
  %0 = pp.sharded_cross_entropy_grad @world %g, %z, %y over ["tp"] : (tensor<f32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @loss_grad_result(%g: tensor<f32>, %z: tensor<2x8xf32>, %y: tensor<2xi64>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy_grad' op result 'tensor<2x4xf32>' must have the logits' type 'tensor<2x8xf32>'}}
  %0 = pp.sharded_cross_entropy_grad @world %g, %z, %y over ["tp"] : (tensor<f32>, tensor<2x8xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @loss_grad_mesh(%g: tensor<f32>, %z: tensor<2x8xf32>, %y: tensor<2xi64>) {
  // expected-error @+1 {{'pp.sharded_cross_entropy_grad' op needs at least one mesh axis}}
  %0 = pp.sharded_cross_entropy_grad @world %g, %z, %y over [] : (tensor<f32>, tensor<2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"tp" = 2, tensor>]

func.func @gather_mesh(%t: tensor<8x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'pp.sharded_gather' op names mesh axis "tp" twice}}
  %0 = pp.sharded_gather @world %t, %i over ["tp", "tp"] axis = 0 : (tensor<8x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

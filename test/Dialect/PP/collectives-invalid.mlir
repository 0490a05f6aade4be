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

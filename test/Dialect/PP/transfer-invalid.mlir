// RUN: pp-opt %s -split-input-file -verify-diagnostics

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @to_itself(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.transfer' op moves values from stage 1 to itself}}
  %0 = pp.transfer @world %x from 1 to 1 names ["x"] : tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @name_count(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'pp.transfer' op carries 2 tensors but names 1}}
  %0:2 = pp.transfer @world %x, %y from 0 to 1 names ["x"] : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @duplicate_name(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'pp.send' op names tensor "x" twice}}
  pp.send @world %x, %y to 1 names ["x", "x"] : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @empty_name(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.send' op tensor names must not be empty}}
  pp.send @world %x to 1 names [""] : tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @nothing() {
  // expected-error @+1 {{'pp.recv' op must carry at least one tensor}}
  "pp.recv"() <{mesh = @world, from = 0 : i64, names = []}> : () -> ()
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @source_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.transfer' op source stage -1 is out of range: mesh @world has 4 pipeline stages}}
  %0 = pp.transfer @world %x from -1 to 1 names ["x"] : tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @destination_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.transfer' op destination stage 4 is out of range: mesh @world has 4 pipeline stages}}
  %0 = pp.transfer @world %x from 0 to 4 names ["x"] : tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @send_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.send' op destination stage 7 is out of range: mesh @world has 4 pipeline stages}}
  pp.send @world %x to 7 names ["x"] : tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @recv_range() {
  // expected-error @+1 {{'pp.recv' op source stage 9 is out of range: mesh @world has 4 pipeline stages}}
  %0 = pp.recv @world from 9 names ["x"] : tensor<4xf32>
  return
}

// -----

func.func @recv_mesh() {
  // expected-error @+1 {{'pp.recv' op @absent does not name a pp.mesh}}
  %0 = pp.recv @absent from 0 names ["x"] : tensor<4xf32>
  return
}

// -----

pp.mesh @world [#pp.axis<"pp" = 4, pipeline>]

func.func @result_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pp.transfer' op failed to verify that all of {values, results} have same type}}
  %0 = "pp.transfer"(%x) <{mesh = @world, from = 0 : i64, to = 1 : i64, names = ["x"]}> : (tensor<4xf32>) -> tensor<8xf32>
  return
}

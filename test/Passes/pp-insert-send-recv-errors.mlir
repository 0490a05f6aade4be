// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-insert-send-recv

// expected-error @+1 {{no pipeline mesh @pipeline; run pp-partition first}}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.relu' op has no pp.stage; run pp-partition first}}
  %y = nn.relu %x : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

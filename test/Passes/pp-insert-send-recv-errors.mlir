// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-insert-send-recv

// expected-error @+1 {{the program has no pp.stage ops; run pp-partition first}}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %s = pp.stage @pipeline stage 0 ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  // expected-error @+1 {{'nn.relu' op is outside every pp.stage; run pp-partition on the whole program}}
  %y = nn.relu %s : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %s = pp.stage @pipeline stage 1 ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  // expected-error @+1 {{'pp.stage' op takes a value from stage 1 in phase forward, against the pipeline's direction; the partition is not in program order}}
  %t = pp.stage @pipeline stage 0 ins(%s) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %t : tensor<2xf32>
}

// -----

pp.mesh @pipeline [#pp.axis<"pp" = 2, pipeline>]
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %s = pp.stage @pipeline stage 1 phase<backward> ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  // expected-error @+1 {{'pp.stage' op is a forward stage but takes a value of stage 1 in phase backward; forward stages run before every backward one}}
  %t = pp.stage @pipeline stage 0 ins(%s) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %t : tensor<2xf32>
}

// RUN: pp-opt %s -split-input-file -verify-diagnostics --pp-split-backward
// RUN: not pp-opt %S/Inputs/mlp-loss.mlir --pp-autodiff --pp-partition=stages=2 --pp-insert-send-recv --pp-split-backward --pp-split-backward 2>&1 >/dev/null | FileCheck %s --check-prefix=TWICE

// Before pp-partition.
// expected-error @+1 {{the program has no pp.stage ops; run pp-partition first}}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{expected the training program as func.func @main}}
module {
}

// -----

// A forward-only program (pp-mark-outputs).
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
// expected-error @+1 {{a forward-only program (pp-mark-outputs) has no backward to split; drop split-backward}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32>
    attributes {pp.forward_only} {
  %0 = pp.stage @pipeline stage 0 ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// Stages without a backward.
pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>]
// expected-error @+1 {{the program has no pp.stage op of phase backward to split; compile a training program (a loss and pp-autodiff)}}
func.func @main(%x: tensor<2xf32> {pp.name = "x", pp.role = "input"}) -> tensor<2xf32> {
  %0 = pp.stage @pipeline stage 0 ins(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    pp.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// TWICE: error: 'pp.stage' op is already a half of a split backward; run pp-split-backward once

// RUN: pp-opt %s -verify-diagnostics --pp-outline-stages

// expected-error @+1 {{the program is not partitioned; run pp-partition and pp-insert-send-recv first}}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// RUN: pp-opt %s | pp-opt | FileCheck %s
// RUN: pp-opt %s --mlir-print-op-generic | pp-opt | FileCheck %s

pp.mesh @world [#pp.axis<"pp" = 2, pipeline>, #pp.axis<"dp" = 2, data_replicate>,
                #pp.axis<"fsdp" = 2, data_shard>, #pp.axis<"tp" = 4, tensor>]

// CHECK-LABEL: func @collectives
func.func @collectives(%x: tensor<8x16xf32>) {
  // CHECK: pp.all_reduce @world %{{.*}} over ["dp", "fsdp"] reduction<sum> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %0 = pp.all_reduce @world %x over ["dp", "fsdp"] reduction<sum> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: pp.all_reduce @world %{{.*}} over ["tp"] reduction<max>
  %1 = pp.all_reduce @world %0 over ["tp"] reduction<max> : (tensor<8x16xf32>) -> tensor<8x16xf32>
  // CHECK: pp.all_gather @world %{{.*}} over ["tp"] dim = 1 : (tensor<8x16xf32>) -> tensor<8x64xf32>
  %2 = pp.all_gather @world %1 over ["tp"] dim = 1 : (tensor<8x16xf32>) -> tensor<8x64xf32>
  // CHECK: pp.reduce_scatter @world %{{.*}} over ["tp", "fsdp"] dim = 0 reduction<min> : (tensor<8x64xf32>) -> tensor<1x64xf32>
  %3 = pp.reduce_scatter @world %2 over ["tp", "fsdp"] dim = 0 reduction<min> : (tensor<8x64xf32>) -> tensor<1x64xf32>
  return
}

// A sharded parameter's manifest entry: "shape" is the shard the stage
// functions take, "global_shape" and "sharding" the whole tensor and its
// layout; parameters.bin holds the whole initial value (16 x 16 floats).
// The stage code, with its collective kernels, compiles for the CPU here;
// the CUDA code of a tensor-parallel model compiles with the tree
// (test/Device), and emitting never runs nvcc.
// RUN: rm -rf %t && pp-opt %s --pp-emit-package="dir=%t" -o /dev/null
// RUN: FileCheck %s < %t/manifest.json
// RUN: FileCheck %s --check-prefix=CPP < %t/stages.cpp
// RUN: test -f %t/libstages.so
// RUN: test ! -e %t/libstages_cuda.so

// CHECK: "mesh": {
// CHECK-NEXT: "axes": [
// CHECK: "name": "tp",
// CHECK-NEXT: "size": 2,
// CHECK-NEXT: "kind": "tensor"
// CHECK: "parameters": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "embedding",
// CHECK-NEXT: "role": "parameter",
// CHECK-NEXT: "dtype": "f32",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 8,
// CHECK-NEXT: 16
// CHECK-NEXT: ],
// CHECK-NEXT: "global_shape": [
// CHECK-NEXT: 16,
// CHECK-NEXT: 16
// CHECK-NEXT: ],
// CHECK-NEXT: "sharding": {
// CHECK-NEXT: "axis": "tp",
// CHECK-NEXT: "dim": 0,
// CHECK-NEXT: "blocks": 1
// CHECK-NEXT: },
// CHECK-NEXT: "stage": 0,
// CHECK-NEXT: "init": "file",
// CHECK-NEXT: "offset": 0,
// CHECK-NEXT: "bytes": 1024
// CHECK: "name": "qkv",
// CHECK: "global_shape": [
// CHECK-NEXT: 16,
// CHECK-NEXT: 48
// CHECK-NEXT: ],
// CHECK-NEXT: "sharding": {
// CHECK-NEXT: "axis": "tp",
// CHECK-NEXT: "dim": 1,
// CHECK-NEXT: "blocks": 3
// CHECK-NEXT: },
// CHECK-NEXT: "stage": 0,
// CHECK-NEXT: "init": "seeded_by_name"
// A replicated parameter has neither member.
// CHECK: "name": "bias",
// CHECK-NOT: "sharding"
// CHECK: "init": "seeded_by_name"
// CHECK: "stages": [
// CHECK: "parameters.bin": {
// CHECK-NEXT: "bytes": 1024,

// CPP: pp_cpu_sharded_gather(
// CPP: pp_cpu_all_reduce(
// CPP: pp_cpu_shard_slice(
// CPP: pp_cpu_sharded_cross_entropy(

module attributes {pp.loss = {ignore_index = -100 : i64, kind = "cross_entropy", output = "loss"}, pp.stage_costs = [{}]} {
  pp.mesh @pipeline [#pp.axis<"pp" = 1, pipeline>, #pp.axis<"tp" = 2, tensor>]
  func.func @stage0_forward(
      %tokens: tensor<2x4xi64> {pp.name = "tokens", pp.role = "input"},
      %labels: tensor<2x4xi64> {pp.name = "labels", pp.role = "label"},
      %embedding: tensor<8x16xf32> {pp.name = "embedding", pp.role = "parameter", pp.sharding = #pp.sharding<[["tp"], []]>, pp.init = dense_resource<embedding_init> : tensor<16x16xf32>},
      %qkv: tensor<16x24xf32> {pp.name = "qkv", pp.role = "parameter", pp.sharding = #pp.sharding<[[], ["tp"]], blocks = [1, 3]>},
      %bias: tensor<16xf32> {pp.name = "bias", pp.role = "parameter"})
      -> (tensor<f32> {pp.name = "loss", pp.role = "loss"})
      attributes {pp.stage = 0 : i64, pp.phase = #pp.phase<forward>} {
    %e = pp.sharded_gather @pipeline %embedding, %tokens over ["tp"] axis = 0 : (tensor<8x16xf32>, tensor<2x4xi64>) -> tensor<2x4x16xf32>
    %h = pp.all_reduce @pipeline %e over ["tp"] reduction<sum> : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %logits = pp.shard_slice @pipeline %h over ["tp"] dim = 2 : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
    %loss = pp.sharded_cross_entropy @pipeline %logits, %labels over ["tp"] : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      embedding_init: "0x04000000000000000000803E0000003F0000403F0000803F0000A03F0000C03F0000E03F0000004000001040000020400000304000004040000050400000604000007040000080400000884000009040000098400000A0400000A8400000B0400000B8400000C0400000C8400000D0400000D8400000E0400000E8400000F0400000F84000000041000004410000084100000C4100001041000014410000184100001C4100002041000024410000284100002C4100003041000034410000384100003C4100004041000044410000484100004C4100005041000054410000584100005C4100006041000064410000684100006C4100007041000074410000784100007C41000080410000824100008441000086410000884100008A4100008C4100008E41000090410000924100009441000096410000984100009A4100009C4100009E410000A0410000A2410000A4410000A6410000A8410000AA410000AC410000AE410000B0410000B2410000B4410000B6410000B8410000BA410000BC410000BE410000C0410000C2410000C4410000C6410000C8410000CA410000CC410000CE410000D0410000D2410000D4410000D6410000D8410000DA410000DC410000DE410000E0410000E2410000E4410000E6410000E8410000EA410000EC410000EE410000F0410000F2410000F4410000F6410000F8410000FA410000FC410000FE410000004200000142000002420000034200000442000005420000064200000742000008420000094200000A4200000B4200000C4200000D4200000E4200000F420000104200001142000012420000134200001442000015420000164200001742000018420000194200001A4200001B4200001C4200001D4200001E4200001F420000204200002142000022420000234200002442000025420000264200002742000028420000294200002A4200002B4200002C4200002D4200002E4200002F420000304200003142000032420000334200003442000035420000364200003742000038420000394200003A4200003B4200003C4200003D4200003E4200003F420000404200004142000042420000434200004442000045420000464200004742000048420000494200004A4200004B4200004C4200004D4200004E4200004F420000504200005142000052420000534200005442000055420000564200005742000058420000594200005A4200005B4200005C4200005D4200005E4200005F420000604200006142000062420000634200006442000065420000664200006742000068420000694200006A4200006B4200006C4200006D4200006E4200006F420000704200007142000072420000734200007442000075420000764200007742000078420000794200007A4200007B4200007C4200007D4200007E4200007F42"
    }
  }
#-}

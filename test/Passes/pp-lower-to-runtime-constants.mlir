// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s

// Constants of every runtime element type become `constant(frame, dtype,
// rank, shape, count, values)` with the values in a static array: one value
// for a splat, infinities and NaN through std::numeric_limits, i1 as 0/1,
// the most negative i64 without an out-of-range literal. A constant becomes
// a tensor at its first use.
// CHECK-LABEL: func.func @stage0_forward(
// CHECK: %[[MASK:.*]] = emitc.call_opaque "pp_cpu_constant"(%{{.*}}) {args = [0 : index, #emitc.opaque<"PP_DTYPE_BOOL">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{2, 3}.data()">, #emitc.opaque<"6">, #emitc.opaque<"[] { static const uint8_t values[] = {1, 0, 1, 0, 0, 1}; return values; }()">]}
// CHECK: %[[NINF:.*]] = emitc.call_opaque "pp_cpu_constant"(%{{.*}}) {args = [0 : index, #emitc.opaque<"PP_DTYPE_F32">, #emitc.opaque<"0">, #emitc.opaque<"nullptr">, #emitc.opaque<"1">, #emitc.opaque<"[] { static const float values[] = {-std::numeric_limits<float>::infinity()}; return values; }()">]}
// CHECK: emitc.call_opaque "pp_cpu_where"(%{{.*}}, %[[MASK]], %{{.*}}, %[[NINF]])
// CHECK: emitc.call_opaque "pp_cpu_constant"(%{{.*}}) {args = [0 : index, #emitc.opaque<"PP_DTYPE_I64">, #emitc.opaque<"1">, #emitc.opaque<"std::array<int64_t, 1>{3}.data()">, #emitc.opaque<"3">, #emitc.opaque<"[] { static const int64_t values[] = {0, (-9223372036854775807 - 1), 2}; return values; }()">]}
// CHECK: emitc.call_opaque "pp_cpu_constant"(%{{.*}}) {args = [0 : index, #emitc.opaque<"PP_DTYPE_F64">, #emitc.opaque<"1">, #emitc.opaque<"std::array<int64_t, 1>{2}.data()">, #emitc.opaque<"2">, #emitc.opaque<"[] { static const double values[] = {std::numeric_limits<double>::quiet_NaN(), 0x1.8p+0}; return values; }()">]}
// CHECK: emitc.call_opaque "pp_cpu_constant"(%{{.*}}) {args = [0 : index, #emitc.opaque<"PP_DTYPE_I32">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{2, 2}.data()">, #emitc.opaque<"1">, #emitc.opaque<"[] { static const int32_t values[] = {(-2147483647 - 1)}; return values; }()">]}
func.func @stage0_forward(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xi64>, tensor<2xf64>, tensor<2x2xi32>) attributes {pp.stage = 0 : i64} {
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %mask = arith.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
  %y = nn.where %mask, %x, %ninf : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %ids = arith.constant dense<[0, -9223372036854775808, 2]> : tensor<3xi64>
  %wide = arith.constant dense<[0x7FF8000000000000, 1.5]> : tensor<2xf64>
  %small = arith.constant dense<-2147483648> : tensor<2x2xi32>
  return %y, %ids, %wide, %small : tensor<2x3xf32>, tensor<3xi64>, tensor<2xf64>, tensor<2x2xi32>
}

// A variadic operand (concat's inputs) is a count and a local array of the
// tensors; each tensor lives until the call that takes the array.
// CHECK-LABEL: func.func @stage1_forward(
// CHECK: %[[A:.*]] = emitc.call_opaque "pp_frame_arg"(%{{.*}}) {args = [0 : index, #emitc.opaque<"0">]}
// CHECK: %[[B:.*]] = emitc.call_opaque "pp_cpu_transpose"(%{{.*}}, %[[A]]) {args = [0 : index, 1 : index, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{1, 0}.data()">]}
// CHECK: %[[ARRAY:.*]] = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.array<3x!emitc.ptr<!emitc.opaque<"pp_tensor">>>
// CHECK: %[[I0:.*]] = emitc.literal "0" : index
// CHECK: %[[E0:.*]] = emitc.subscript %[[ARRAY]][%[[I0]]]
// CHECK: emitc.assign %[[A]] : !emitc.ptr<!emitc.opaque<"pp_tensor">> to %[[E0]]
// CHECK: emitc.assign %[[B]]
// CHECK: emitc.assign %[[A]]
// CHECK: %[[C:.*]] = emitc.call_opaque "pp_cpu_concat"(%{{.*}}, %[[ARRAY]]) {args = [0 : index, #emitc.opaque<"3">, 1 : index, #emitc.opaque<"0">]}
// CHECK-NEXT: emitc.call_opaque "pp_frame_profile_end"
// CHECK-NEXT: emitc.call_opaque "pp_frame_release"(%{{.*}}, %[[B]])
// CHECK: emitc.call_opaque "pp_cpu_slice"(%{{.*}}, %[[C]]) {args = [0 : index, 1 : index, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{9, 3}.data()">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{1, 0}.data()">, #emitc.opaque<"2">, #emitc.opaque<"std::array<int64_t, 2>{2, 1}.data()">]}
// CHECK: emitc.call_opaque "pp_cpu_broadcast_to"(%{{.*}}, %{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"3">, #emitc.opaque<"std::array<int64_t, 3>{2, 4, 3}.data()">]}
// CHECK: emitc.call_opaque "pp_cpu_trilu"(%{{.*}}, %{{.*}}) {args = [0 : index, 1 : index, #emitc.opaque<"-1">, #emitc.opaque<"1">]}
func.func @stage1_forward(%a: tensor<3x3xf32>) -> tensor<2x4x3xf32> attributes {pp.stage = 1 : i64} {
  %b = nn.transpose %a permutation = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %c = nn.concat %a, %b, %a axis = 0 : (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<9x3xf32>
  %s = nn.slice %c starts = [1, 0] limits = [9, 3] strides = [2, 1] : (tensor<9x3xf32>) -> tensor<4x3xf32>
  %d = nn.broadcast_to %s shape = [2, 4, 3] : (tensor<4x3xf32>) -> tensor<2x4x3xf32>
  %t = nn.trilu %d diagonal = -1 upper : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %t : tensor<2x4x3xf32>
}

// bf16 and f16 constants are their bits: 1.5 is 0x3FC0 in bf16 (16320) and
// 0x3E00 in f16 (15872), -2.0 is 0xC000 in both (49152).
// CHECK-LABEL: func.func @stage2_forward(
// CHECK: emitc.call_opaque "pp_cpu_constant"(%{{.*}}) {args = [0 : index, #emitc.opaque<"PP_DTYPE_BF16">, #emitc.opaque<"1">, #emitc.opaque<"std::array<int64_t, 1>{2}.data()">, #emitc.opaque<"2">, #emitc.opaque<"[] { static const uint16_t values[] = {16320, 49152}; return values; }()">]}
// CHECK: emitc.call_opaque "pp_cpu_constant"(%{{.*}}) {args = [0 : index, #emitc.opaque<"PP_DTYPE_F16">, #emitc.opaque<"0">, #emitc.opaque<"nullptr">, #emitc.opaque<"1">, #emitc.opaque<"[] { static const uint16_t values[] = {15872}; return values; }()">]}
func.func @stage2_forward() -> (tensor<2xbf16>, tensor<f16>) attributes {pp.stage = 2 : i64} {
  %b = arith.constant dense<[1.5, -2.0]> : tensor<2xbf16>
  %h = arith.constant dense<1.5> : tensor<f16>
  return %b, %h : tensor<2xbf16>, tensor<f16>
}

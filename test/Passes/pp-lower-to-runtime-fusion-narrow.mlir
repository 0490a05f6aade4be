// RUN: pp-opt %s --pp-lower-to-runtime | FileCheck %s
// RUN: rm -rf %t && pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=1 loss=mse:y precision=bf16" --pp-emit-package="dir=%t compile=false" -o /dev/null 2>/dev/null
// RUN: FileCheck %s --check-prefix=CPP < %t/stages.cpp

// A bf16 fusion reads its elements as floats and rounds each op's result to
// bf16, as the op's own kernel would: fusing changes no bits, wherever a
// partition cuts a group. Its result tensors are bf16.
// CHECK: emitc.verbatim "// nn.fusion of add gelu over tensor<4x8xbf16>.
// CHECK-SAME: fusion_stage0_forward_0_rows(const pp::runtime::BFloat16 *in0, const pp::runtime::BFloat16 *in1, pp::runtime::BFloat16 *out0, int64_t begin, int64_t end)
// CHECK-SAME: const float x1 = pp::runtime::loadFloat(in1[i1 * 1]);
// CHECK-SAME: const float v0 = pp::runtime::loadFloat(pp::runtime::storeFloat<pp::runtime::BFloat16>(pp::runtime::elementwise::add(x0, x1)));
// CHECK-SAME: out0[at] = pp::runtime::storeFloat<pp::runtime::BFloat16>(v1);
// CHECK-SAME: pp_cpu_empty(frame, PP_DTYPE_BF16, 2, shape)
// CHECK-SAME: const pp::runtime::BFloat16 *in1 = static_cast<const pp::runtime::BFloat16 *>(pp_tensor_data(inputs[1]));
// CHECK-SAME: pp::runtime::BFloat16 *out0 = static_cast<pp::runtime::BFloat16 *>(pp_tensor_data(results[0]));
func.func @stage0_forward(%x: tensor<4x8xbf16>, %b: tensor<8xbf16>)
    -> tensor<4x8xbf16> attributes {pp.stage = 0 : i64} {
  %0 = nn.fusion (%x, %b)
      : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16> {
  ^bb0(%a: tensor<4x8xbf16>, %c: tensor<8xbf16>):
    %s = nn.add %a, %c : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
    %g = nn.gelu %s approximate<tanh> : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
    nn.yield %g : tensor<4x8xbf16>
  }
  return %0 : tensor<4x8xbf16>
}

// The MLP compiled at precision=bf16: its forward fusion (fc1's bias add
// and tanh) is a bf16 loop.
// CPP: #include "runtime/kernels/FloatElements.h"
// CPP-LABEL: // nn.fusion of add tanh over tensor<2x4xbf16>.
// CPP: const float v1 = pp::runtime::loadFloat(pp::runtime::storeFloat<pp::runtime::BFloat16>(pp::runtime::elementwise::tanh(v0)));
// CPP: results[r] = pp_cpu_empty(frame, PP_DTYPE_BF16, 2, shape);

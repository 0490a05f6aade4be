//===- CudaKernelTypesTest.cpp - dtypes the CUDA kernels take -------------===//
//
// The CUDA compute kernels take f32, bf16 or f16 tensors, every float
// operand of one dtype. They check the dtypes before touching a GPU, so
// these tests run on host tensors on any machine that builds the CUDA
// runtime; test/Device/CudaFloatTypesCheck.cpp checks the bf16 and f16
// results on a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace pp::runtime;

namespace {

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using OwnedTensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host tensor of `dtype` and `shape` (its elements unread).
OwnedTensor hostTensor(pp_dtype dtype, std::vector<int64_t> shape) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(dtype, static_cast<int64_t>(shape.size()),
                             shape.data(), &tensor),
            PP_OK);
  return OwnedTensor(tensor);
}

/// The error `call(frame)` records in a fresh frame, or "a result" when it
/// returns a tensor.
template <typename Call> std::string frameErrorOf(Call call) {
  pp_frame frame;
  OwnedTensor result(call(&frame));
  return result ? "a result" : frame.error;
}

TEST(CudaKernelTypes, KernelRejectsATensorThatIsNotFloat) {
  OwnedTensor input = hostTensor(PP_DTYPE_I64, {4});
  EXPECT_EQ(frameErrorOf([&](pp_frame *frame) {
              return pp_cuda_relu(frame, input.get());
            }),
            "relu expects f32, bf16 or f16 tensors, got i64");
}

TEST(CudaKernelTypes, EveryFloatOperandMustHaveTheFirstOnesDtype) {
  OwnedTensor bf16 = hostTensor(PP_DTYPE_BF16, {2, 4});
  OwnedTensor f16 = hostTensor(PP_DTYPE_F16, {2, 4});
  OwnedTensor f32 = hostTensor(PP_DTYPE_F32, {2, 4});
  OwnedTensor f32Weight = hostTensor(PP_DTYPE_F32, {4});
  OwnedTensor f16Matrix = hostTensor(PP_DTYPE_F16, {4, 2});
  OwnedTensor f32Scalar = hostTensor(PP_DTYPE_F32, {});
  OwnedTensor labels = hostTensor(PP_DTYPE_I64, {2});
  using Call = std::function<pp_tensor *(pp_frame *)>;
  const std::pair<Call, std::string> cases[] = {
      {[&](pp_frame *f) { return pp_cuda_add(f, bf16.get(), f32.get()); },
       "add expects operands of one element type, got bf16 and f32 "
       "(cast one with nn.cast)"},
      {[&](pp_frame *f) {
         return pp_cuda_layer_norm(f, f16.get(), f32Weight.get(), nullptr, -1,
                                   1e-5);
       },
       "layer_norm expects operands of one element type, got f16 and f32 "
       "(cast one with nn.cast)"},
      {[&](pp_frame *f) {
         return pp_cuda_matmul(f, bf16.get(), f16Matrix.get(), 0, 0);
       },
       "matmul expects operands of one element type, got bf16 and f16 "
       "(cast one with nn.cast)"},
      {[&](pp_frame *f) {
         return pp_cuda_cross_entropy_grad(f, f32Scalar.get(), bf16.get(),
                                           labels.get(), -100, 0);
       },
       "cross_entropy_grad expects operands of one element type, got f32 and "
       "bf16 "
       "(cast one with nn.cast)"},
      {[&](pp_frame *f) {
         return pp_cuda_softmax_grad(f, f16.get(), bf16.get(), -1);
       },
       "softmax_grad expects operands of one element type, got f16 and bf16 "
       "(cast one with nn.cast)"},
  };
  for (const auto &[call, message] : cases)
    EXPECT_EQ(frameErrorOf(call), message);
}

TEST(CudaKernelTypes, DeviceGemmRefusesADtypeItCannotMultiply) {
  int64_t a = 1, b = 1, c = 0;
  EXPECT_EQ(
      deviceGemm(PP_DTYPE_I64, false, false, 1, 1, 1, &a, 1, &b, 1, &c, 1),
      PP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pp_last_error(),
               "the GPU matmul takes f32, bf16 or f16, got i64");
}

TEST(CudaKernelTypes, DeviceGemmChecksHalfArgumentsBeforeCallingCuBlas) {
  uint16_t a = 0, b = 0, c = 0;
  EXPECT_EQ(
      deviceGemm(PP_DTYPE_BF16, false, false, -1, 1, 1, &a, 1, &b, 1, &c, 1),
      PP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(pp_last_error(), "deviceGemm: sizes m = -1, n = 1, k = 1 must "
                                "not be negative");
}

} // namespace

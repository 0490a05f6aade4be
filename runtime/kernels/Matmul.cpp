//===- Matmul.cpp - batched matrix products over a GEMM -------------------===//

#include "runtime/kernels/Matmul.h"

namespace pp::runtime {

pp_tensor *batchedMatmul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs,
                         bool transposeLhs, bool transposeRhs,
                         TensorFactory create, GemmFunction gemm) {
  std::string error;
  Shape lhsShape = shapeOf(lhs), rhsShape = shapeOf(rhs);
  std::optional<MatmulPlan> plan =
      planMatmul(lhsShape, rhsShape, transposeLhs, transposeRhs, error);
  if (!plan) {
    failFrame(frame, error);
    return nullptr;
  }
  pp_tensor *result = create(frame, PP_DTYPE_F32, plan->result);
  if (!result || plan->m * plan->n == 0)
    return result;
  const float *a = static_cast<const float *>(pp_tensor_data(lhs));
  const float *b = static_cast<const float *>(pp_tensor_data(rhs));
  float *c = static_cast<float *>(pp_tensor_data(result));
  for (size_t batch = 0; batch < plan->lhsOffsets.size(); ++batch) {
    // beta = 0: C is written without being read (zeros when k == 0).
    if (gemm(transposeLhs, transposeRhs, plan->m, plan->n, plan->k, 1.0f,
             a + plan->lhsOffsets[batch], lhsShape.back(),
             b + plan->rhsOffsets[batch], rhsShape.back(), 0.0f,
             c + batch * plan->m * plan->n, plan->n) != PP_OK) {
      failFrame(frame, pp_last_error());
      pp_tensor_destroy(result);
      return nullptr;
    }
  }
  return result;
}

} // namespace pp::runtime

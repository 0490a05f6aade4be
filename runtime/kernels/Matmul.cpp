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
  pp_dtype dtype = pp_tensor_dtype(lhs);
  pp_tensor *result = create(frame, dtype, plan->result);
  if (!result || plan->m * plan->n == 0)
    return result;
  size_t size = pp_dtype_size(dtype);
  const char *a = static_cast<const char *>(pp_tensor_data(lhs));
  const char *b = static_cast<const char *>(pp_tensor_data(rhs));
  char *c = static_cast<char *>(pp_tensor_data(result));
  for (size_t batch = 0; batch < plan->lhsOffsets.size(); ++batch) {
    if (gemm(dtype, transposeLhs, transposeRhs, plan->m, plan->n, plan->k,
             a + plan->lhsOffsets[batch] * size, lhsShape.back(),
             b + plan->rhsOffsets[batch] * size, rhsShape.back(),
             c + batch * plan->m * plan->n * size, plan->n) != PP_OK) {
      failFrame(frame, pp_last_error());
      pp_tensor_destroy(result);
      return nullptr;
    }
  }
  return result;
}

} // namespace pp::runtime

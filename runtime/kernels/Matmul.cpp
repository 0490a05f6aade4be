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

void matmulAdd(pp_frame *frame, pp_tensor *sum, pp_tensor *lhs, pp_tensor *rhs,
               bool transposeLhs, bool transposeRhs, F32GemmFunction gemm) {
  if (!sum || !lhs || !rhs)
    return;
  for (pp_tensor *tensor : {sum, lhs, rhs})
    if (pp_tensor_dtype(tensor) != PP_DTYPE_F32 || pp_tensor_rank(tensor) != 2)
      return failFrame(frame,
                       "matmul_add: adds a product of 2-D f32 "
                       "matrices into a 2-D f32 sum, not " +
                           std::string(pp_dtype_name(pp_tensor_dtype(tensor))) +
                           " of shape " + formatShape(shapeOf(tensor)));
  std::string error;
  Shape lhsShape = shapeOf(lhs), rhsShape = shapeOf(rhs);
  std::optional<MatmulPlan> plan =
      planMatmul(lhsShape, rhsShape, transposeLhs, transposeRhs, error);
  if (plan && plan->result != shapeOf(sum))
    error = "matmul_add: the product is " + formatShape(plan->result) +
            ", the sum " + formatShape(shapeOf(sum));
  if (!error.empty())
    return failFrame(frame, error);
  if (gemm(transposeLhs, transposeRhs, plan->m, plan->n, plan->k, 1.0f,
           static_cast<const float *>(pp_tensor_data(lhs)), lhsShape.back(),
           static_cast<const float *>(pp_tensor_data(rhs)), rhsShape.back(),
           1.0f, static_cast<float *>(pp_tensor_data(sum)), plan->n) != PP_OK)
    failFrame(frame, pp_last_error());
}

} // namespace pp::runtime

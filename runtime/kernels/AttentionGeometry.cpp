//===- AttentionGeometry.cpp - the shapes of an nn.attention call ---------===//

#include "runtime/kernels/AttentionGeometry.h"

#include "runtime/core/Shapes.h"
#include "runtime/kernels/Frame.h"

#include <algorithm>

namespace pp::runtime {

namespace {

std::vector<int64_t> shapeOfTensor(const pp_tensor *tensor) {
  const int64_t *dims = pp_tensor_shape(tensor);
  return std::vector<int64_t>(dims, dims + pp_tensor_rank(tensor));
}

/// `operand` (of `shape`) broadcast to `scores` as in NumPy, or nullopt when
/// it does not broadcast.
std::optional<BroadcastScores>
broadcastToScores(const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &scores, int64_t heads) {
  size_t rank = scores.size();
  if (shape.size() > rank)
    return std::nullopt;
  // The operand's stride along each scores dimension, 0 where it
  // broadcasts.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t dim = shape.size() - 1 - i, at = rank - 1 - i;
    if (shape[dim] != scores[at] && shape[dim] != 1)
      return std::nullopt;
    strides[at] = shape[dim] == 1 ? 0 : stride;
    stride *= shape[dim];
  }
  BroadcastScores broadcast;
  broadcast.rowStride = strides[rank - 2];
  broadcast.columnStride = strides[rank - 1];
  broadcast.headOffsets.reserve(heads);
  for (int64_t head = 0; head < heads; ++head) {
    int64_t offset = 0, rest = head;
    for (size_t at = rank - 2; at-- > 0;) {
      offset += (rest % scores[at]) * strides[at];
      rest /= scores[at];
    }
    broadcast.headOffsets.push_back(offset);
  }
  return broadcast;
}

} // namespace

std::optional<AttentionGeometry>
planAttention(const char *kernel, const pp_tensor *query, const pp_tensor *key,
              const pp_tensor *value, const pp_tensor *bias,
              const pp_tensor *mask, int divide, double fill, int fillWhereTrue,
              double scale, int transposeKey, std::string &error) {
  std::string name = kernel;
  for (const pp_tensor *tensor : {query, key, value, bias})
    if (tensor && pp_tensor_dtype(tensor) != PP_DTYPE_F32) {
      error = name + ": query, key, value and bias must be f32, got " +
              pp_dtype_name(pp_tensor_dtype(tensor)) +
              " (pp-fuse-attention fuses f32 attention only)";
      return std::nullopt;
    }
  if (mask && pp_tensor_dtype(mask) != PP_DTYPE_BOOL) {
    error = name + ": the mask must be bool, got " +
            pp_dtype_name(pp_tensor_dtype(mask));
    return std::nullopt;
  }
  std::vector<int64_t> q = shapeOfTensor(query), k = shapeOfTensor(key),
                       v = shapeOfTensor(value);
  size_t rank = q.size();
  auto describe = [&] {
    return formatShape(q) + ", " + formatShape(k) + " and " + formatShape(v);
  };
  if (rank < 2 || k.size() != rank || v.size() != rank ||
      !std::equal(q.begin(), q.end() - 2, k.begin()) ||
      !std::equal(q.begin(), q.end() - 2, v.begin())) {
    error = name +
            ": query, key and value must have one rank, 2 or more, "
            "and the same leading dimensions, got " +
            describe();
    return std::nullopt;
  }
  AttentionGeometry geometry;
  geometry.transposeKey = transposeKey != 0;
  geometry.queries = q[rank - 2];
  geometry.depth = q[rank - 1];
  geometry.keys = k[rank - (geometry.transposeKey ? 2 : 1)];
  geometry.valueDepth = v[rank - 1];
  if (k[rank - (geometry.transposeKey ? 1 : 2)] != geometry.depth ||
      v[rank - 2] != geometry.keys) {
    error =
        name +
        ": query, key and value disagree on the depth or the "
        "key positions: " +
        describe() +
        (geometry.transposeKey ? " (key [..., Sk, D])" : " (key [..., D, Sk])");
    return std::nullopt;
  }
  geometry.heads = 1;
  for (size_t i = 0; i + 2 < rank; ++i)
    geometry.heads *= q[i];
  geometry.resultShape.assign(q.begin(), q.end() - 2);
  std::vector<int64_t> scores = geometry.resultShape;
  scores.push_back(geometry.queries);
  scores.push_back(geometry.keys);
  geometry.resultShape.push_back(geometry.queries);
  geometry.resultShape.push_back(geometry.valueDepth);
  auto broadcast = [&](const pp_tensor *tensor, const char *what,
                       std::optional<BroadcastScores> &slot) {
    if (!tensor)
      return true;
    slot = broadcastToScores(shapeOfTensor(tensor), scores, geometry.heads);
    if (!slot)
      error = name + ": the " + what + " " +
              formatShape(shapeOfTensor(tensor)) +
              " does not broadcast to the scores " + formatShape(scores);
    return slot.has_value();
  };
  if (!broadcast(bias, "bias", geometry.bias) ||
      !broadcast(mask, "mask", geometry.mask))
    return std::nullopt;
  geometry.transform.scale = static_cast<float>(scale);
  geometry.transform.divide = divide != 0;
  geometry.transform.fill = static_cast<float>(fill);
  geometry.transform.fillWhereTrue = fillWhereTrue != 0;
  return geometry;
}

std::optional<AttentionGeometry>
attentionCall(pp_frame *frame, const char *kernel, const pp_tensor *query,
              const pp_tensor *key, const pp_tensor *value,
              const pp_tensor *bias, const pp_tensor *mask, int divide,
              double fill, int fillWhereTrue, double scale, int transposeKey) {
  if (!query || !key || !value)
    return std::nullopt;
  std::string error;
  std::optional<AttentionGeometry> geometry =
      planAttention(kernel, query, key, value, bias, mask, divide, fill,
                    fillWhereTrue, scale, transposeKey, error);
  if (!geometry)
    failFrame(frame, error);
  return geometry;
}

std::optional<AttentionGeometry>
attentionGradCall(pp_frame *frame, const pp_tensor *grad,
                  const pp_tensor *query, const pp_tensor *key,
                  const pp_tensor *value, const pp_tensor *bias,
                  const pp_tensor *mask, int divide, double fill,
                  int fillWhereTrue, double scale, int transposeKey) {
  std::optional<AttentionGeometry> geometry =
      attentionCall(frame, "attention_grad", query, key, value, bias, mask,
                    divide, fill, fillWhereTrue, scale, transposeKey);
  if (!geometry || !grad)
    return std::nullopt;
  if (pp_tensor_dtype(grad) == PP_DTYPE_F32 &&
      shapeOfTensor(grad) == geometry->resultShape)
    return geometry;
  failFrame(frame, std::string("attention_grad: the gradient is ") +
                       pp_dtype_name(pp_tensor_dtype(grad)) + " " +
                       formatShape(shapeOfTensor(grad)) +
                       ", the attention's result f32 " +
                       formatShape(geometry->resultShape));
  return std::nullopt;
}

bool newAttentionGradients(pp_frame *frame, TensorFactory create,
                           const pp_tensor *query, const pp_tensor *key,
                           const pp_tensor *value, pp_tensor **results) {
  const pp_tensor *operands[] = {query, key, value};
  for (int i = 0; i < 3; ++i) {
    results[i] = create(frame, PP_DTYPE_F32, shapeOfTensor(operands[i]));
    if (!results[i]) {
      discardResults(results, i);
      return false;
    }
  }
  return true;
}

} // namespace pp::runtime

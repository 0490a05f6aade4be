//===- CpuAttentionKernels.cpp - nn.attention one head at a time ----------===//
//
// pp_cpu_attention and pp_cpu_attention_grad run the ops that
// pp-fuse-attention replaced with the same arithmetic, one head at a time:
// the scores' GEMM (hostGemm, as pp_cpu_matmul calls it per batch), the
// scale, bias and mask (ScoreTransform, each step in f32 as the elementwise
// kernels compute it), softmaxRows, and the weighted sum's GEMM; the
// gradient recomputes a head's probabilities the same way, then runs the
// GEMMs pp-autodiff makes for the two matmuls and softmax_grad's rows. So
// a fused program gives the unfused one's bits, while a head's scores never
// leave the cache and no probabilities are saved for the backward.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/AttentionHeads.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/kernels/SoftmaxRows.h"

#include <vector>

using namespace pp::runtime;

namespace {

/// The host target of AttentionHeads.h.
struct HostAttention : AttentionTarget {
  /// Each score through the transform (the unfused mul or div, add and
  /// where, each in f32), then pp_cpu_softmax's rows, in place.
  bool softmax(int64_t head, float *scores) const {
    const AttentionGeometry &g = ops.geometry;
    for (int64_t i = 0; i < g.queries; ++i) {
      float *row = scores + i * g.keys;
      BroadcastRow<float> bias = rowOf(ops.bias, g.bias, head, i);
      BroadcastRow<uint8_t> mask = rowOf(ops.mask, g.mask, head, i);
      for (int64_t j = 0; j < g.keys; ++j)
        row[j] = g.transform.apply(row[j], bias.at(j), mask.at(j));
    }
    cpu::softmaxRows(scores, g.queries, g.keys, scores);
    return true;
  }

  /// pp_cpu_softmax_grad's rows over `gradient` in place, then each
  /// element through the transform's gradient.
  bool scoresGradient(int64_t head, const float *probabilities,
                      float *gradient) const {
    const AttentionGeometry &g = ops.geometry;
    for (int64_t i = 0; i < g.queries; ++i) {
      const float *y = probabilities + i * g.keys;
      float *row = gradient + i * g.keys;
      BroadcastRow<uint8_t> mask = rowOf(ops.mask, g.mask, head, i);
      double dot = 0;
      for (int64_t j = 0; j < g.keys; ++j)
        dot += static_cast<double>(row[j]) * y[j];
      for (int64_t j = 0; j < g.keys; ++j)
        row[j] = g.transform.gradient(static_cast<float>(y[j] * (row[j] - dot)),
                                      mask.at(j));
    }
    return true;
  }

  /// Row i of head `head`'s bias or mask: its first element (null without
  /// one) and the distance between its elements.
  template <typename T> struct BroadcastRow {
    const T *first;
    int64_t column;
    const T *at(int64_t j) const {
      return first ? first + j * column : nullptr;
    }
  };
  template <typename T>
  static BroadcastRow<T> rowOf(const T *elements,
                               const std::optional<BroadcastScores> &scores,
                               int64_t head, int64_t i) {
    if (!elements)
      return {nullptr, 0};
    return {elements + scores->headOffsets[head] + i * scores->rowStride,
            scores->columnStride};
  }
};

float *elementsOf(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

} // namespace

extern "C" {

pp_tensor *pp_cpu_attention(pp_frame *frame, pp_tensor *query, pp_tensor *key,
                            pp_tensor *value, pp_tensor *bias, pp_tensor *mask,
                            int divide, double fill, int fill_where_true,
                            double scale, int transpose_key) {
  std::optional<AttentionGeometry> geometry =
      attentionCall(frame, "attention", query, key, value, bias, mask, divide,
                    fill, fill_where_true, scale, transpose_key);
  if (!geometry)
    return nullptr;
  pp_tensor *result = newTensor(frame, PP_DTYPE_F32, geometry->resultShape);
  if (!result)
    return nullptr;
  AttentionOperands ops(*geometry, query, key, value, bias, mask);
  HostAttention target{{frame, ops, hostGemm}};
  std::vector<float> probabilities(geometry->scoresBlock());
  for (int64_t head = 0; head < geometry->heads; ++head)
    if (!attentionHead(target, ops, head, probabilities.data(),
                       elementsOf(result))) {
      pp_tensor_destroy(result);
      return nullptr;
    }
  return result;
}

void pp_cpu_attention_grad(pp_frame *frame, pp_tensor *grad, pp_tensor *query,
                           pp_tensor *key, pp_tensor *value, pp_tensor *bias,
                           pp_tensor *mask, int divide, double fill,
                           int fill_where_true, double scale, int transpose_key,
                           pp_tensor **results) {
  results[0] = results[1] = results[2] = nullptr;
  std::optional<AttentionGeometry> geometry =
      attentionGradCall(frame, grad, query, key, value, bias, mask, divide,
                        fill, fill_where_true, scale, transpose_key);
  if (!geometry ||
      !newAttentionGradients(frame, newTensor, query, key, value, results))
    return;
  AttentionOperands ops(*geometry, query, key, value, bias, mask);
  HostAttention target{{frame, ops, hostGemm}};
  std::vector<float> probabilities(geometry->scoresBlock()),
      gradient(geometry->scoresBlock());
  for (int64_t head = 0; head < geometry->heads; ++head)
    if (!attentionGradHead(target, ops, head, elementsOf(grad),
                           probabilities.data(), gradient.data(),
                           elementsOf(results[0]), elementsOf(results[1]),
                           elementsOf(results[2]))) {
      discardResults(results, 3);
      return;
    }
}

} // extern "C"

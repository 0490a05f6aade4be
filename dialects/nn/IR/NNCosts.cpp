//===- NNCosts.cpp - the work of ops that is not one op per element -------===//
//
// nn::CostOpInterface of the ops whose floating-point work pp-partition's
// cost model cannot infer from their shapes.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

using namespace mlir;
using namespace pp::nn;

double pp::nn::staticElementCount(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

double MatmulOp::estimateFlops() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  int64_t k = getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                : lhs.getDimSize(lhs.getRank() - 1);
  return 2.0 * staticElementCount(getType()) * k;
}

// An exponential, a sum, a logarithm and a subtraction per logit.
double CrossEntropyOp::estimateFlops() {
  return 4.0 * staticElementCount(getLogits().getType());
}

double CrossEntropyGradOp::estimateFlops() {
  return 4.0 * staticElementCount(getLogits().getType());
}

// One operation per input element, whatever the result's size.
double ReduceSumOp::estimateFlops() {
  return staticElementCount(getInput().getType());
}

double ReduceMeanOp::estimateFlops() {
  return staticElementCount(getInput().getType());
}

double ReduceMaxOp::estimateFlops() {
  return staticElementCount(getInput().getType());
}

/// The scores of an attention of `query` and `key` (batch x Sq x Sk) and
/// the query's depth D.
static std::pair<double, double> attentionScores(Value query, Value key,
                                                 bool transposeKey) {
  auto keyType = cast<RankedTensorType>(key.getType());
  auto queryType = cast<RankedTensorType>(query.getType());
  int64_t keys = keyType.getDimSize(keyType.getRank() - (transposeKey ? 2 : 1));
  int64_t depth = queryType.getDimSize(queryType.getRank() - 1);
  return {staticElementCount(queryType) / std::max<int64_t>(depth, 1) * keys,
          static_cast<double>(depth)};
}

// The scores' and the weighted sum's GEMMs, and about 5 operations per
// score (scale, bias, mask, the softmax's exponential and normalization).
double AttentionOp::estimateFlops() {
  auto [scores, depth] =
      attentionScores(getQuery(), getKey(), getTransposeKey());
  double valueDepth = getType().getDimSize(getType().getRank() - 1);
  return scores * (2.0 * depth + 2.0 * valueDepth + 5.0);
}

// The scores recomputed, four GEMMs (the probabilities' and value's
// gradients, then the query's and key's) and about 9 operations per score.
double AttentionGradOp::estimateFlops() {
  auto [scores, depth] =
      attentionScores(getQuery(), getKey(), getTransposeKey());
  auto value = cast<RankedTensorType>(getValue().getType());
  double valueDepth = value.getDimSize(value.getRank() - 1);
  return scores * (6.0 * depth + 4.0 * valueDepth + 9.0);
}

/// The logits of an LM head loss: positions x V, and the depth D.
static std::pair<double, double> headLogits(Value hidden, Value weight,
                                            bool transposeWeight) {
  auto hiddenType = cast<RankedTensorType>(hidden.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t depth = hiddenType.getDimSize(hiddenType.getRank() - 1);
  int64_t classes = weightType.getDimSize(transposeWeight ? 0 : 1);
  return {staticElementCount(hiddenType) / std::max<int64_t>(depth, 1) *
              classes,
          static_cast<double>(depth)};
}

// The logits' GEMM and cross-entropy's 4 operations per logit.
double LinearCrossEntropyOp::estimateFlops() {
  auto [logits, depth] =
      headLogits(getHidden(), getWeight(), getTransposeWeight());
  return logits * (2.0 * depth + 4.0);
}

// The logits recomputed, the hidden states' GEMM, and cross_entropy_grad's
// 4 operations per logit.
double LinearCrossEntropyHiddenGradOp::estimateFlops() {
  auto [logits, depth] =
      headLogits(getHidden(), getWeight(), getTransposeWeight());
  return logits * (4.0 * depth + 4.0);
}

// The logits recomputed, the hidden states' and the weight's GEMMs, and
// cross_entropy_grad's 4 operations per logit.
double LinearCrossEntropyGradOp::estimateFlops() {
  auto [logits, depth] =
      headLogits(getHidden(), getWeight(), getTransposeWeight());
  return logits * (6.0 * depth + 4.0);
}

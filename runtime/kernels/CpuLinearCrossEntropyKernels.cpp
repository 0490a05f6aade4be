//===- CpuLinearCrossEntropyKernels.cpp - an LM head loss by chunks -------===//
//
// pp_cpu_linear_cross_entropy and its gradient run the LM head's matmul and
// the cross-entropy that pp-fuse-cross-entropy replaced, a chunk of rows at
// a time (LinearCrossEntropyChunks.h): the chunk's logits from the same
// GEMM pp_cpu_matmul calls per batch, then pp_cpu_cross_entropy's rows
// (CrossEntropyRows.h), the losses added in row order at the end. The
// gradient recomputes a chunk's logits, turns them into their gradient in
// place as pp_cpu_cross_entropy_grad does, and multiplies it into the
// hidden states' gradient and into the weight's, which adds up the chunks
// in order. No more than one chunk of logits is ever made.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CrossEntropyLabels.h"
#include "runtime/kernels/CrossEntropyRows.h"
#include "runtime/kernels/LinearCrossEntropyChunks.h"

#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace pp::runtime;

namespace {

/// The host target of LinearCrossEntropyChunks.h: the rows of
/// pp_cpu_cross_entropy and pp_cpu_cross_entropy_grad.
struct HostLinearCrossEntropy : LinearCrossEntropyTarget {
  const LinearCrossEntropyGeometry &geometry;
  std::vector<int64_t> labels;
  int64_t ignoreIndex;
  int reduction;
  /// The rows the loss counts.
  int64_t counted;
  /// The bias (null without one).
  const float *bias = nullptr;
  /// Each row's loss (the forward).
  double *rowLosses = nullptr;
  /// The loss's gradient (the backward).
  const float *lossGrad = nullptr;
  /// The bias gradient's sums (the backward, with a bias).
  double *biasSums = nullptr;

  bool addBias(int64_t rows, float *logits) const {
    int64_t classes = geometry.classes;
    cpu::forEachChunk(rows, classes, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t c = 0; c < classes; ++c)
          logits[r * classes + c] = logits[r * classes + c] + bias[c];
    });
    return true;
  }

  /// Each column's sum over the rows in row order, the columns split
  /// between the threads (pp_cpu_sum_to's order of additions).
  bool sumBiasGradient(int64_t rows, const float *gradient) const {
    if (!biasSums)
      return true;
    int64_t classes = geometry.classes;
    cpu::forEachChunk(classes, rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = begin; c < end; ++c)
          biasSums[c] += gradient[r * classes + c];
    });
    return true;
  }

  bool losses(int64_t first, int64_t rows, const float *logits) const {
    cpu::crossEntropyLosses(logits, rows, geometry.classes,
                            labels.data() + first, ignoreIndex,
                            rowLosses + first);
    return true;
  }

  bool gradient(int64_t first, int64_t rows, float *logits) const {
    cpu::crossEntropyGradRows<float>(
        logits, reduction == 2 ? lossGrad + first : lossGrad, logits, rows,
        geometry.classes, labels.data() + first, ignoreIndex, reduction,
        counted);
    return true;
  }
};

const float *floatsOf(pp_tensor *tensor) {
  return static_cast<const float *>(pp_tensor_data(tensor));
}
float *mutableFloatsOf(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

/// The host target of a call of `kernel` whose geometry is `geometry`, the
/// labels checked; nullopt, the error in `frame`, when they are not valid.
std::optional<HostLinearCrossEntropy>
hostTarget(pp_frame *frame, const char *kernel,
           const LinearCrossEntropyGeometry &geometry, pp_tensor *labels,
           int64_t ignoreIndex, int reduction) {
  std::optional<std::vector<int64_t>> values =
      crossEntropyLabels(frame, kernel, geometry.logitsShape, labels,
                         ignoreIndex, pp_tensor_data(labels));
  if (!values)
    return std::nullopt;
  int64_t counted = cpu::countedLabels(*values, ignoreIndex);
  return HostLinearCrossEntropy{
      {frame, pp_gemm_f32}, geometry,  std::move(*values),
      ignoreIndex,          reduction, counted};
}

/// Scratch for one chunk's logits, which every chunk overwrites whole (no
/// zero fill), outside the memory plan; null, the error in `frame`, when
/// the host has no room for it.
std::unique_ptr<float[]>
chunkScratch(pp_frame *frame, const LinearCrossEntropyGeometry &geometry) {
  std::unique_ptr<float[]> scratch(
      new (std::nothrow) float[geometry.chunkElements()]);
  if (!scratch)
    failFrame(frame, "linear_cross_entropy: no memory for a chunk of " +
                         std::to_string(geometry.chunkElements()) +
                         " logits; use a smaller --cross-entropy-chunk");
  return scratch;
}

/// The bias gradient from its sums into `biasGrad`, rounded once to f32 as
/// pp_cpu_sum_to rounds it, and added to what it holds when `added` as the
/// runtime adds a gradient into its sum.
void storeBiasGradient(const std::vector<double> &sums, pp_tensor *biasGrad,
                       bool added) {
  float *out = mutableFloatsOf(biasGrad);
  for (size_t c = 0; c < sums.size(); ++c)
    out[c] = added ? out[c] + static_cast<float>(sums[c])
                   : static_cast<float>(sums[c]);
}

/// The gradients of the hidden states into `hiddenGrad` and of the head's
/// parameters into `parameters`: the host's GradientsInto.
bool gradientsInto(const LinearCrossEntropyGeometry &geometry,
                   const LinearCrossEntropyGradArgs &args,
                   pp_tensor *hiddenGrad, const HeadGradients &parameters,
                   pp_frame *frame) {
  std::optional<HostLinearCrossEntropy> target =
      hostTarget(frame, "linear_cross_entropy_grad", geometry, args.labels,
                 args.ignoreIndex, args.reduction);
  if (!target)
    return false;
  target->bias = args.bias ? floatsOf(args.bias) : nullptr;
  target->lossGrad = floatsOf(args.grad);
  std::vector<double> biasSums(parameters.bias ? geometry.classes : 0, 0.0);
  target->biasSums = parameters.bias ? biasSums.data() : nullptr;
  LinearCrossEntropyOperands ops{geometry, floatsOf(args.hidden),
                                 floatsOf(args.weight)};
  std::unique_ptr<float[]> logits = chunkScratch(frame, geometry);
  if (!logits ||
      !linearCrossEntropyGradients(
          *target, ops, logits.get(), mutableFloatsOf(hiddenGrad),
          parameters.weight ? mutableFloatsOf(parameters.weight) : nullptr,
          parameters.added))
    return false;
  if (parameters.bias)
    storeBiasGradient(biasSums, parameters.bias, parameters.added);
  return true;
}

/// gradientsInto for the calls of `frame`.
auto hostGradientsInto(pp_frame *frame) {
  return [frame](const LinearCrossEntropyGeometry &geometry,
                 const LinearCrossEntropyGradArgs &args, pp_tensor *hiddenGrad,
                 const HeadGradients &parameters) {
    return gradientsInto(geometry, args, hiddenGrad, parameters, frame);
  };
}

} // namespace

extern "C" {

pp_tensor *pp_cpu_linear_cross_entropy(pp_frame *frame, pp_tensor *hidden,
                                       pp_tensor *weight, pp_tensor *labels,
                                       pp_tensor *bias, int64_t chunk_rows,
                                       int64_t ignore_index, int reduction,
                                       int transpose_weight) {
  std::optional<LinearCrossEntropyGeometry> geometry = linearCrossEntropyCall(
      frame, "linear_cross_entropy", hidden, weight, labels, bias, chunk_rows,
      reduction, transpose_weight);
  if (!geometry)
    return nullptr;
  std::optional<HostLinearCrossEntropy> target =
      hostTarget(frame, "linear_cross_entropy", *geometry, labels, ignore_index,
                 reduction);
  if (!target)
    return nullptr;
  std::vector<double> rowLosses(geometry->rows, 0.0);
  target->rowLosses = rowLosses.data();
  target->bias = bias ? floatsOf(bias) : nullptr;
  LinearCrossEntropyOperands ops{*geometry, floatsOf(hidden), floatsOf(weight)};
  std::unique_ptr<float[]> logits = chunkScratch(frame, *geometry);
  if (!logits || !linearCrossEntropyLosses(*target, ops, logits.get()))
    return nullptr;
  return cpu::crossEntropyResult(frame, rowLosses, target->labels.data(),
                                 ignore_index, reduction, PP_DTYPE_F32,
                                 geometry->lossShape);
}

void pp_cpu_linear_cross_entropy_grad(pp_frame *frame, pp_tensor *grad,
                                      pp_tensor *hidden, pp_tensor *weight,
                                      pp_tensor *labels, pp_tensor *bias,
                                      int64_t chunk_rows, int64_t ignore_index,
                                      int reduction, int transpose_weight,
                                      pp_tensor **results) {
  linearCrossEntropyGradResults(frame, newTensor,
                                {grad, hidden, weight, labels, bias, chunk_rows,
                                 ignore_index, reduction, transpose_weight},
                                results, hostGradientsInto(frame));
}

pp_tensor *pp_cpu_linear_cross_entropy_grad_add(
    pp_frame *frame, pp_tensor *sum, pp_tensor *bias_sum, pp_tensor *grad,
    pp_tensor *hidden, pp_tensor *weight, pp_tensor *labels, pp_tensor *bias,
    int64_t chunk_rows, int64_t ignore_index, int reduction,
    int transpose_weight) {
  return linearCrossEntropyGradAdded(frame, newTensor, sum, bias_sum,
                                     {grad, hidden, weight, labels, bias,
                                      chunk_rows, ignore_index, reduction,
                                      transpose_weight},
                                     hostGradientsInto(frame));
}

pp_tensor *pp_cpu_linear_cross_entropy_hidden_grad(
    pp_frame *frame, pp_tensor *grad, pp_tensor *hidden, pp_tensor *weight,
    pp_tensor *labels, pp_tensor *bias, int64_t chunk_rows,
    int64_t ignore_index, int reduction, int transpose_weight) {
  return linearCrossEntropyHiddenGrad(frame, newTensor,
                                      {grad, hidden, weight, labels, bias,
                                       chunk_rows, ignore_index, reduction,
                                       transpose_weight},
                                      hostGradientsInto(frame));
}

} // extern "C"

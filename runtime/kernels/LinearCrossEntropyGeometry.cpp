//===- LinearCrossEntropyGeometry.cpp - an LM head loss's shapes ----------===//

#include "runtime/kernels/LinearCrossEntropyGeometry.h"

#include "runtime/kernels/Frame.h"

#include <string>

namespace pp::runtime {

std::optional<LinearCrossEntropyGeometry>
linearCrossEntropyCall(pp_frame *frame, const char *kernel, pp_tensor *hidden,
                       pp_tensor *weight, pp_tensor *labels, pp_tensor *bias,
                       int64_t chunkRows, int reduction, int transposeWeight) {
  if (!hidden || !weight || !labels)
    return std::nullopt;
  Shape hiddenShape = shapeOf(hidden), weightShape = shapeOf(weight);
  std::string prefix = std::string(kernel) + ": ";
  auto fail = [&](const std::string &message) {
    failFrame(frame, prefix + message);
    return std::nullopt;
  };
  if (pp_tensor_dtype(hidden) != PP_DTYPE_F32 ||
      pp_tensor_dtype(weight) != PP_DTYPE_F32)
    return fail(std::string("takes f32 hidden states and weight, got ") +
                pp_dtype_name(pp_tensor_dtype(hidden)) + " and " +
                pp_dtype_name(pp_tensor_dtype(weight)));
  LinearCrossEntropyGeometry g;
  g.transposeWeight = transposeWeight != 0;
  const char *weightForm = g.transposeWeight ? "[V, D]" : "[D, V]";
  if (hiddenShape.empty() || weightShape.size() != 2 ||
      hiddenShape.back() != weightShape[g.transposeWeight ? 1 : 0])
    return fail("hidden states " + formatShape(hiddenShape) + " and weight " +
                formatShape(weightShape) + " do not fit: the hidden states " +
                "are [..., D] and the weight " + weightForm);
  if (chunkRows < 1)
    return fail("chunk_rows must be positive, got " +
                std::to_string(chunkRows));
  if (reduction < 0 || reduction > 2)
    return fail("unknown reduction " + std::to_string(reduction) +
                " (0 mean, 1 sum, 2 none)");
  g.depth = hiddenShape.back();
  g.classes = weightShape[g.transposeWeight ? 0 : 1];
  if (bias && (pp_tensor_dtype(bias) != PP_DTYPE_F32 ||
               shapeOf(bias) != Shape{g.classes}))
    return fail(std::string("the bias is ") +
                pp_dtype_name(pp_tensor_dtype(bias)) + " " +
                formatShape(shapeOf(bias)) + ", not f32 [" +
                std::to_string(g.classes) + "] (the weight's classes)");
  g.hasBias = bias != nullptr;
  g.rows = numElements(Shape(hiddenShape.begin(), hiddenShape.end() - 1));
  g.chunkRows = chunkRows;
  g.logitsShape = Shape(hiddenShape.begin(), hiddenShape.end() - 1);
  if (reduction == 2)
    g.lossShape = g.logitsShape;
  g.logitsShape.push_back(g.classes);
  return g;
}

std::optional<LinearCrossEntropyGeometry>
linearCrossEntropyGradCall(pp_frame *frame, pp_tensor *grad, pp_tensor *hidden,
                           pp_tensor *weight, pp_tensor *labels,
                           pp_tensor *bias, int64_t chunkRows, int reduction,
                           int transposeWeight) {
  std::optional<LinearCrossEntropyGeometry> geometry = linearCrossEntropyCall(
      frame, "linear_cross_entropy_grad", hidden, weight, labels, bias,
      chunkRows, reduction, transposeWeight);
  if (!geometry || !grad)
    return std::nullopt;
  if (pp_tensor_dtype(grad) == PP_DTYPE_F32 &&
      shapeOf(grad) == geometry->lossShape)
    return geometry;
  failFrame(frame, std::string("linear_cross_entropy_grad: the loss "
                               "gradient is ") +
                       pp_dtype_name(pp_tensor_dtype(grad)) + " " +
                       formatShape(shapeOf(grad)) + ", the loss f32 " +
                       formatShape(geometry->lossShape));
  return std::nullopt;
}

bool checkGradientSum(pp_frame *frame, const char *what, pp_tensor *sum,
                      pp_tensor *parameter) {
  if (!parameter)
    return false;
  if (sum && pp_tensor_dtype(sum) == PP_DTYPE_F32 &&
      shapeOf(sum) == shapeOf(parameter))
    return true;
  failFrame(frame, std::string("linear_cross_entropy_grad_add: the ") + what +
                       "'s gradient sum is " +
                       (sum ? std::string(pp_dtype_name(pp_tensor_dtype(sum))) +
                                  " " + formatShape(shapeOf(sum))
                            : std::string("missing")) +
                       ", the " + what + " f32 " +
                       formatShape(shapeOf(parameter)));
  return false;
}

} // namespace pp::runtime

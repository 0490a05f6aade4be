//===- CrossEntropyLabels.cpp - checked cross_entropy labels -------------===//

#include "runtime/kernels/CrossEntropyLabels.h"

namespace pp::runtime {

std::optional<std::vector<int64_t>>
crossEntropyLabels(pp_frame *frame, const char *kernel, pp_tensor *logits,
                   pp_tensor *labels, int64_t ignoreIndex,
                   const void *hostLabels, int64_t pieces) {
  return crossEntropyLabels(frame, kernel, shapeOf(logits), labels, ignoreIndex,
                            hostLabels, pieces);
}

std::optional<std::vector<int64_t>>
crossEntropyLabels(pp_frame *frame, const char *kernel, const Shape &shape,
                   pp_tensor *labels, int64_t ignoreIndex,
                   const void *hostLabels, int64_t pieces) {
  pp_dtype dtype = pp_tensor_dtype(labels);
  Shape positions = shapeOf(labels);
  if (dtype != PP_DTYPE_I64 && dtype != PP_DTYPE_I32) {
    failFrame(frame, std::string(kernel) + ": labels must be i64 or i32, got " +
                         pp_dtype_name(dtype));
    return std::nullopt;
  }
  if (shape.empty() || Shape(shape.begin(), shape.end() - 1) != positions) {
    failFrame(frame, std::string(kernel) + ": labels " +
                         formatShape(positions) + " are not the logits shape " +
                         formatShape(shape) + " without its class dimension");
    return std::nullopt;
  }
  int64_t classes = pieces * shape.back(), count = pp_tensor_numel(labels);
  std::vector<int64_t> values(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t label = dtype == PP_DTYPE_I64
                        ? static_cast<const int64_t *>(hostLabels)[i]
                        : static_cast<const int32_t *>(hostLabels)[i];
    if (label != ignoreIndex && (label < 0 || label >= classes)) {
      failFrame(frame, std::string(kernel) + ": label " +
                           std::to_string(label) + " (position " +
                           std::to_string(i) + ") is outside [0, " +
                           std::to_string(classes) +
                           ") and is not the "
                           "ignore_index " +
                           std::to_string(ignoreIndex));
      return std::nullopt;
    }
    values[i] = label;
  }
  return values;
}

} // namespace pp::runtime

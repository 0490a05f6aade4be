//===- Frame.cpp - one call of a generated stage function -----------------===//

#include "runtime/kernels/Frame.h"

#include "runtime/core/Shapes.h"

#include <cstring>
#include <sstream>

using namespace pp::runtime;

pp_frame::~pp_frame() {
  for (pp_tensor *result : results)
    pp_tensor_destroy(result);
}

namespace pp::runtime {

void failFrame(pp_frame *frame, const std::string &message) {
  if (frame->error.empty())
    frame->error = message;
}

pp_tensor *newTensor(pp_frame *frame, pp_dtype dtype,
                     const std::vector<int64_t> &shape) {
  pp_tensor *tensor = nullptr;
  int64_t rank = static_cast<int64_t>(shape.size());
  pp_status status = frame->allocator
                         ? pp_tensor_create_in(frame->allocator, dtype, rank,
                                               shape.data(), &tensor)
                         : pp_tensor_create(dtype, rank, shape.data(), &tensor);
  if (status != PP_OK) {
    failFrame(frame, pp_last_error());
    return nullptr;
  }
  return tensor;
}

std::vector<int64_t> shapeOf(const pp_tensor *tensor) {
  const int64_t *shape = pp_tensor_shape(tensor);
  return std::vector<int64_t>(shape, shape + pp_tensor_rank(tensor));
}

std::optional<std::vector<int64_t>> reshapeTarget(pp_frame *frame,
                                                  pp_tensor *input,
                                                  int64_t rank,
                                                  const int64_t *shape) {
  if (!input)
    return std::nullopt;
  std::vector<int64_t> target(shape, shape + rank);
  if (std::string error = reshapeError(shapeOf(input), target);
      !error.empty()) {
    failFrame(frame, error);
    return std::nullopt;
  }
  return target;
}

/// `copy`, or nullopt with `error` recorded in `frame`.
static std::optional<StridedCopy> recordFailure(pp_frame *frame,
                                                std::optional<StridedCopy> copy,
                                                const std::string &error) {
  if (!copy)
    failFrame(frame, error);
  return copy;
}

std::optional<StridedCopy> splitCopy(pp_frame *frame, pp_tensor *input,
                                     int64_t axis, int64_t count,
                                     const int64_t *sizes, int64_t index) {
  if (!input)
    return std::nullopt;
  std::string error;
  std::optional<StridedCopy> copy =
      planSplit(shapeOf(input), axis, count, sizes, index, error);
  return recordFailure(frame, std::move(copy), error);
}

std::optional<StridedCopy>
sliceGradCopy(pp_frame *frame, pp_tensor *grad, int64_t inputRank,
              const int64_t *inputShape, int64_t startCount,
              const int64_t *starts, int64_t limitCount, const int64_t *limits,
              int64_t strideCount, const int64_t *strides) {
  if (!grad)
    return std::nullopt;
  std::string error;
  std::optional<StridedCopy> copy =
      planSliceGrad(shapeOf(grad), inputRank, inputShape, startCount, starts,
                    limitCount, limits, strideCount, strides, error);
  return recordFailure(frame, std::move(copy), error);
}

} // namespace pp::runtime

extern "C" {

pp_tensor *pp_frame_arg(pp_frame *frame, int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(frame->args.size())) {
    failFrame(frame, "stage function asked for argument " +
                         std::to_string(index) + " of " +
                         std::to_string(frame->args.size()));
    return nullptr;
  }
  return frame->args[index];
}

void pp_frame_result(pp_frame *frame, pp_tensor *tensor, int64_t index) {
  if (index < 0)
    return failFrame(frame, "negative result index");
  if (static_cast<int64_t>(frame->results.size()) <= index)
    frame->results.resize(index + 1, nullptr);
  pp_tensor_destroy(frame->results[index]);
  frame->results[index] = tensor;
}

void pp_frame_release(pp_frame *, pp_tensor *tensor) {
  pp_tensor_destroy(tensor);
}

void pp_frame_send(pp_frame *frame, pp_tensor *tensor, int64_t to_stage,
                   const char *name) {
  if (!tensor)
    return;
  if (!frame->channel)
    return failFrame(frame, "this stage function sends but has no channel");
  frame->channel->send(to_stage, name, *tensor);
}

pp_tensor *pp_frame_recv(pp_frame *frame, int64_t from_stage, const char *name,
                         pp_dtype dtype, int64_t rank, const int64_t *shape) {
  pp_tensor *tensor =
      newTensor(frame, dtype, std::vector<int64_t>(shape, shape + rank));
  if (!tensor)
    return nullptr;
  if (!frame->channel) {
    failFrame(frame, "this stage function receives but has no channel");
  } else if (std::string error =
                 frame->channel->recv(from_stage, name, *tensor);
             !error.empty()) {
    failFrame(frame, error);
  } else {
    return tensor;
  }
  pp_tensor_destroy(tensor);
  return nullptr;
}

} // extern "C"

//===- Frame.cpp - one call of a generated stage function -----------------===//

#include "runtime/kernels/Frame.h"

#include "runtime/core/PlacedTensor.h"
#include "runtime/core/ReshapedTensor.h"
#include "runtime/core/Shapes.h"
#include "runtime/device/Device.h"
#include "runtime/device/Queue.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/MemoryArena.h"

#include <cstring>
#include <exception>
#include <sstream>

using namespace pp::runtime;

pp_frame::~pp_frame() {
  for (pp_tensor *result : results)
    pp_tensor_destroy(result);
  for (auto &[index, sum] : madeSums)
    pp_tensor_destroy(sum);
}

namespace pp::runtime {

void failFrame(pp_frame *frame, const std::string &message) {
  if (frame->error.empty())
    frame->error = message;
}

pp_tensor *failedOverwrite(pp_tensor *operand, bool owned) {
  if (owned)
    pp_tensor_destroy(operand);
  return nullptr;
}

pp_tensor *newTensor(pp_frame *frame, pp_dtype dtype,
                     const std::vector<int64_t> &shape) {
  if (frame->arena && frame->error.empty())
    if (std::optional<pp_tensor *> placed =
            frame->arena->place(frame, dtype, shape))
      return *placed;
  return newHeapTensor(frame, dtype, shape);
}

pp_tensor *newHeapTensor(pp_frame *frame, pp_dtype dtype,
                         const std::vector<int64_t> &shape) {
  ++frame->heapAllocations;
  pp_tensor *tensor = nullptr;
  int64_t rank = static_cast<int64_t>(shape.size());
  pp_status status =
      frame->queue ? pp_tensor_create_in(&frame->queue->tensorAllocator(),
                                         dtype, rank, shape.data(), &tensor)
                   : pp_tensor_create(dtype, rank, shape.data(), &tensor);
  if (status != PP_OK) {
    failFrame(frame, pp_last_error());
    return nullptr;
  }
  return tensor;
}

void discardResults(pp_tensor **results, int count) {
  for (int i = 0; i < count; ++i) {
    pp_tensor_destroy(results[i]);
    results[i] = nullptr;
  }
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

std::optional<Shape>
broadcastOperands(pp_frame *frame, const char *kernel,
                  std::initializer_list<pp_tensor *> operands) {
  std::vector<Shape> shapes;
  for (pp_tensor *operand : operands) {
    if (!operand)
      return std::nullopt;
    shapes.push_back(shapeOf(operand));
  }
  std::optional<Shape> shape = Shape();
  for (const Shape &operand : shapes)
    if (shape)
      shape = broadcastShapes(*shape, operand);
  if (shape)
    return shape;
  std::string listed;
  for (size_t i = 0; i < shapes.size(); ++i)
    listed += (i == 0                   ? ""
               : i + 1 == shapes.size() ? " and "
                                        : ", ") +
              formatShape(shapes[i]);
  failFrame(frame,
            std::string(kernel) + ": shapes " + listed + " do not broadcast");
  return std::nullopt;
}

std::optional<Shape> whereShape(pp_frame *frame, pp_tensor *condition,
                                pp_tensor *onTrue, pp_tensor *onFalse) {
  if (!condition || !onTrue || !onFalse)
    return std::nullopt;
  pp_dtype values = pp_tensor_dtype(onTrue);
  if (pp_tensor_dtype(condition) != PP_DTYPE_BOOL ||
      pp_tensor_dtype(onFalse) != values) {
    failFrame(frame, std::string("where: expects an i1 condition and values "
                                 "of one dtype, got ") +
                         pp_dtype_name(pp_tensor_dtype(condition)) + ", " +
                         pp_dtype_name(values) + " and " +
                         pp_dtype_name(pp_tensor_dtype(onFalse)));
    return std::nullopt;
  }
  return broadcastOperands(frame, "where", {condition, onTrue, onFalse});
}

/// The values of `count` indices of type T at `data`, each checked against
/// [-size, size) and counted from the end when negative; nullopt with the
/// error recorded in `frame` for one out of range.
template <typename T>
static std::optional<std::vector<int64_t>>
readIndices(pp_frame *frame, const char *kernel, const void *data,
            int64_t count, int64_t size) {
  std::vector<int64_t> rows(count);
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = static_cast<const T *>(data)[j];
    if (index < -size || index >= size) {
      failFrame(frame, std::string(kernel) + ": index " +
                           std::to_string(index) + " (element " +
                           std::to_string(j) + ") is outside [" +
                           std::to_string(-size) + ", " + std::to_string(size) +
                           ") for an axis of size " + std::to_string(size));
      return std::nullopt;
    }
    rows[j] = index < 0 ? index + size : index;
  }
  return rows;
}

std::optional<GatherPlan> gatherPlan(pp_frame *frame, const char *kernel,
                                     const Shape &dataShape, pp_tensor *indices,
                                     int64_t axis, const void *hostIndices) {
  pp_dtype dtype = pp_tensor_dtype(indices);
  if (dtype != PP_DTYPE_I64 && dtype != PP_DTYPE_I32) {
    failFrame(frame, std::string(kernel) +
                         ": indices must be i64 or i32, got " +
                         pp_dtype_name(dtype));
    return std::nullopt;
  }
  std::string error;
  std::optional<GatherPlan> plan =
      planGather(dataShape, shapeOf(indices), axis, kernel, error);
  if (!plan) {
    failFrame(frame, error);
    return std::nullopt;
  }
  int64_t count = pp_tensor_numel(indices), size = plan->layout.size;
  std::optional<std::vector<int64_t>> rows =
      dtype == PP_DTYPE_I64
          ? readIndices<int64_t>(frame, kernel, hostIndices, count, size)
          : readIndices<int32_t>(frame, kernel, hostIndices, count, size);
  if (!rows)
    return std::nullopt;
  plan->rows = std::move(*rows);
  return plan;
}

bool gatherGradAddOperandsHold(pp_frame *frame, pp_tensor *sum, pp_tensor *grad,
                               pp_tensor *indices) {
  if (!sum || !grad || !indices)
    return false;
  if (pp_tensor_dtype(sum) == PP_DTYPE_F32 &&
      pp_tensor_dtype(grad) == PP_DTYPE_F32)
    return true;
  failFrame(frame, std::string("gather_grad_add: adds f32 into an f32 sum, "
                               "not ") +
                       pp_dtype_name(pp_tensor_dtype(grad)) + " into " +
                       pp_dtype_name(pp_tensor_dtype(sum)));
  return false;
}

std::optional<GatherPlan> gatherGradPlan(pp_frame *frame, pp_tensor *grad,
                                         const Shape &dataShape,
                                         pp_tensor *indices, int64_t axis,
                                         const void *hostIndices) {
  if (!visitFloatType(pp_tensor_dtype(grad), [](auto) {})) {
    failFrame(frame, std::string(
                         "gather_grad expects an f32, bf16 or f16 grad, got ") +
                         pp_dtype_name(pp_tensor_dtype(grad)));
    return std::nullopt;
  }
  std::optional<GatherPlan> plan =
      gatherPlan(frame, "gather_grad", dataShape, indices, axis, hostIndices);
  if (plan && plan->result != shapeOf(grad)) {
    failFrame(frame, "gather_grad: grad " + formatShape(shapeOf(grad)) +
                         " is not the gather result shape " +
                         formatShape(plan->result));
    return std::nullopt;
  }
  return plan;
}

std::optional<pp_dtype> checkCast(pp_frame *frame, pp_dtype from, int to) {
  // Converting an int other than pp_dtype's enumerators (0 to
  // PP_DTYPE_BF16) to pp_dtype is undefined behavior.
  std::optional<pp_dtype> target;
  if (to >= PP_DTYPE_F32 && to <= PP_DTYPE_BF16)
    target = static_cast<pp_dtype>(to);
  auto none = [](auto) {};
  if (target && visitCastType(from, none) && visitCastType(*target, none))
    return target;
  failFrame(frame, std::string("cast: no kernel converts ") +
                       pp_dtype_name(from) + " to " +
                       (target ? pp_dtype_name(*target) : "unknown") +
                       "; the cast kernels convert between f32, bf16, f16, "
                       "f64, i32, i64 and i1");
  return std::nullopt;
}

} // namespace pp::runtime

/// Runs `hook`, a call into the frame's caller; an exception it throws fails
/// the frame (the generated code is C). False when it threw.
template <typename Hook> static bool runCallerHook(pp_frame *frame, Hook hook) {
  try {
    hook();
    return true;
  } catch (const std::exception &error) {
    failFrame(frame, error.what());
    return false;
  }
}

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

pp_tensor *pp_frame_take_arg(pp_frame *frame, int64_t index) {
  pp_tensor *arg = pp_frame_arg(frame, index);
  if (!arg || !frame->error.empty())
    return nullptr;
  if (frame->takeArg) {
    pp_tensor *taken = nullptr;
    if (!runCallerHook(frame, [&] { taken = frame->takeArg(index); }))
      return nullptr;
    if (taken) {
      frame->args[index] = nullptr;
      return taken;
    }
  }
  pp_tensor *copy = newHeapTensor(frame, pp_tensor_dtype(arg), shapeOf(arg));
  if (!copy)
    return nullptr;
  size_t bytes = pp_tensor_nbytes(arg);
  if (bytes == 0)
    return copy;
  if (frame->queue)
    frame->queue->copy(pp_tensor_data(copy), pp_tensor_data(arg), bytes);
  else
    std::memcpy(pp_tensor_data(copy), pp_tensor_data(arg), bytes);
  return copy;
}

pp_tensor *pp_frame_reshape_owned(pp_frame *frame, pp_tensor *tensor,
                                  int64_t rank, const int64_t *shape) {
  std::optional<std::vector<int64_t>> target =
      reshapeTarget(frame, tensor, rank, shape);
  // The call owns `tensor`: a failed reshape releases it.
  if (!target)
    return failedOverwrite(tensor, /*owned=*/true);
  reshapeTensor(tensor, *target);
  return tensor;
}

void pp_frame_result(pp_frame *frame, pp_tensor *tensor, int64_t index) {
  if (index < 0)
    return failFrame(frame, "negative result index");
  if (tensor && isPlacedTensor(tensor))
    return failFrame(frame, "result " + std::to_string(index) +
                                " lives in the stage function's arena, which "
                                "its next call reuses; the manifest's memory "
                                "plan must mark it as outliving the call: "
                                "recompile the model");
  if (static_cast<int64_t>(frame->results.size()) <= index)
    frame->results.resize(index + 1, nullptr);
  pp_tensor_destroy(frame->results[index]);
  frame->results[index] = tensor;
  if (frame->onResult && tensor)
    frame->onResult(index, tensor);
}

pp_tensor *pp_frame_gradient_sum(pp_frame *frame, int64_t index, int64_t rank,
                                 const int64_t *shape) {
  // After a failure the call runs through without touching the sums.
  if (!frame->error.empty())
    return nullptr;
  if (frame->gradientSum) {
    pp_tensor *sum = nullptr;
    if (!runCallerHook(frame, [&] { sum = frame->gradientSum(index); }))
      return nullptr;
    if (!sum) {
      failFrame(frame, "gradient result " + std::to_string(index) +
                           " has no sum to add into");
      return nullptr;
    }
    std::vector<int64_t> expected(shape, shape + rank);
    if (shapeOf(sum) != expected) {
      failFrame(frame, "gradient result " + std::to_string(index) +
                           " has shape " + formatShape(expected) +
                           ", its sum shape " + formatShape(shapeOf(sum)) +
                           "; the manifest and the stage library disagree: "
                           "recompile the model");
      return nullptr;
    }
    return sum;
  }
  // A caller that takes results: a zeroed tensor of the call's own, not
  // one the memory plan lists.
  pp_tensor *&made = frame->madeSums[index];
  if (!made) {
    made = newHeapTensor(frame, PP_DTYPE_F32,
                         std::vector<int64_t>(shape, shape + rank));
    if (made && frame->queue)
      frame->queue->zero(pp_tensor_data(made), pp_tensor_nbytes(made));
  }
  return made;
}

void pp_frame_gradient_added(pp_frame *frame, int64_t index) {
  if (index < 0)
    return failFrame(frame, "negative result index");
  // A failed addition is not counted: the step fails instead.
  if (!frame->error.empty())
    return;
  if (frame->gradientAdded) {
    // Handed over into its sum: the result's slot stays empty.
    if (static_cast<int64_t>(frame->results.size()) <= index)
      frame->results.resize(index + 1, nullptr);
    runCallerHook(frame, [&] { frame->gradientAdded(index); });
    return;
  }
  auto made = frame->madeSums.find(index);
  if (made == frame->madeSums.end())
    return failFrame(frame, "gradient result " + std::to_string(index) +
                                " was added into no pp_frame_gradient_sum");
  pp_tensor *sum = made->second;
  frame->madeSums.erase(made);
  pp_frame_result(frame, sum, index);
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

const pp_device *pp_frame_device(pp_frame *frame) {
  return frame->queue ? &frame->queue->device() : pp_host_device();
}

void *pp_frame_queue_handle(pp_frame *frame) {
  return frame->queue ? frame->queue->nativeHandle() : nullptr;
}

void pp_frame_profile_begin(pp_frame *frame, const char *kind,
                            pp_profile_category category) {
  if (frame->profile)
    frame->profile->begin(kind, category);
}

void pp_frame_profile_end(pp_frame *frame) {
  if (frame->profile)
    frame->profile->end();
}

} // extern "C"

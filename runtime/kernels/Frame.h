//===- Frame.h - one call of a generated stage function ---------*- C++ -*-===//

#ifndef PP_RUNTIME_FRAME_H
#define PP_RUNTIME_FRAME_H

#include "runtime/communication/CollectiveGroup.h"
#include "runtime/core/ElementTypes.h"
#include "runtime/core/HostDevice.h"
#include "runtime/core/Shapes.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/OpProfile.h"
#include "runtime/pp_kernels.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace pp::runtime {

class MemoryArena;
class Queue;

/// Moves named tensors between stages for pp_frame_send/pp_frame_recv.
class MessageChannel {
public:
  virtual ~MessageChannel() = default;
  /// Starts sending `tensor` (copied) to `stage`.
  virtual void send(int64_t stage, const std::string &name,
                    const pp_tensor &tensor) = 0;
  /// Receives the tensor `name` from `stage` into `tensor`, whose shape says
  /// how much to expect. Returns an error message, or "" on success.
  virtual std::string recv(int64_t stage, const std::string &name,
                           pp_tensor &tensor) = 0;
  /// Waits until the tensor `name` from `stage` has arrived, leaving it for
  /// recv(): a schedule's recv action. Returns an error message, or "".
  /// Transports that receive in order on a device stream have nothing to
  /// wait for here.
  virtual std::string await(int64_t /*stage*/, const std::string & /*name*/) {
    return "";
  }
};


/// Creates a tensor for a kernel, recording any failure in `frame`; null on
/// failure. With an arena, the frame's memory plan places it; else (and
/// for what the plan says outlives the call) the allocator of the frame's
/// queue makes it (zero-filled host memory for a frame without a queue).
pp_tensor *newTensor(pp_frame *frame, pp_dtype dtype,
                     const std::vector<int64_t> &shape);

/// newTensor past the memory plan: always from the allocator of the
/// frame's queue (zero-filled host memory for a frame without a queue).
pp_tensor *newHeapTensor(pp_frame *frame, pp_dtype dtype,
                         const std::vector<int64_t> &shape);

/// Records the first error of a call.
void failFrame(pp_frame *frame, const std::string &message);

/// Null, with `operand` released where the call owns it (`owned`): how a
/// kernel that writes its result over its operand (an `_in_place` one)
/// fails before writing.
pp_tensor *failedOverwrite(pp_tensor *operand, bool owned);

/// Destroys the first `count` results of a failing call, leaving null.
void discardResults(pp_tensor **results, int count);

/// The shape of a tensor.
std::vector<int64_t> shapeOf(const pp_tensor *tensor);

/// The shape a reshape of `input` to `shape[0..rank)` produces, or nullopt
/// (with the error recorded in `frame`, or after an earlier failure when
/// `input` is null).
std::optional<std::vector<int64_t>> reshapeTarget(pp_frame *frame,
                                                  pp_tensor *input,
                                                  int64_t rank,
                                                  const int64_t *shape);

/// The copy that makes result `index` of split on `input` (planSplit), or
/// nullopt (with the error recorded in `frame`, or after an earlier failure
/// when `input` is null).
std::optional<StridedCopy> splitCopy(pp_frame *frame, pp_tensor *input,
                                     int64_t axis, int64_t count,
                                     const int64_t *sizes, int64_t index);

/// The copy that scatters `grad` for slice_grad (planSliceGrad), or nullopt
/// (with the error recorded in `frame`, or after an earlier failure when
/// `grad` is null).
std::optional<StridedCopy>
sliceGradCopy(pp_frame *frame, pp_tensor *grad, int64_t inputRank,
              const int64_t *inputShape, int64_t startCount,
              const int64_t *starts, int64_t limitCount, const int64_t *limits,
              int64_t strideCount, const int64_t *strides);

/// The NumPy broadcast of the shapes of `operands`, or nullopt (with the
/// error recorded in `frame`, naming `kernel`, or after an earlier failure
/// when an operand is null).
std::optional<Shape>
broadcastOperands(pp_frame *frame, const char *kernel,
                  std::initializer_list<pp_tensor *> operands);

/// The result shape of where: the operands are present, the condition is
/// bool, the values share a dtype, and the three shapes broadcast; else
/// nullopt, as broadcastOperands.
std::optional<Shape> whereShape(pp_frame *frame, pp_tensor *condition,
                                pp_tensor *onTrue, pp_tensor *onFalse);

/// The plan of a gather (planGather) of data of `dataShape` at `indices`
/// along `axis`, its rows read from `hostIndices` (the indices' values in
/// host memory), or nullopt with the error recorded in `frame`: indices
/// that are not i64 or i32, no such axis, an index outside [-size, size).
std::optional<GatherPlan> gatherPlan(pp_frame *frame, const char *kernel,
                                     const Shape &dataShape, pp_tensor *indices,
                                     int64_t axis, const void *hostIndices);

/// gatherPlan for gather_grad, which scatters `grad` back into data of
/// `dataShape`: also checks that `grad` holds f32, bf16 or f16 values
/// shaped like the gather's result.
std::optional<GatherPlan> gatherGradPlan(pp_frame *frame, pp_tensor *grad,
                                         const Shape &dataShape,
                                         pp_tensor *indices, int64_t axis,
                                         const void *hostIndices);

/// Whether gather_grad_add's operands are there (false, quietly, after an
/// earlier failure made one null) and `sum` and `grad` are f32 (a gradient
/// sum and what adds into it; else the error, recorded in `frame`).
bool gatherGradAddOperandsHold(pp_frame *frame, pp_tensor *sum, pp_tensor *grad,
                               pp_tensor *indices);

/// Calls `visit(T())` with the C++ type of the elements of `dtype` that the
/// cast kernels convert (uint8_t holds a bool; BFloat16 and Half,
/// ElementTypes.h, the 16-bit floats) and returns true; false for a dtype
/// they do not convert.
template <typename Visit> bool visitCastType(pp_dtype dtype, Visit &&visit) {
  if (visitFloatType(dtype, visit))
    return true;
  switch (dtype) {
  case PP_DTYPE_F64:
    visit(double());
    return true;
  case PP_DTYPE_I32:
    visit(int32_t());
    return true;
  case PP_DTYPE_I64:
    visit(int64_t());
    return true;
  case PP_DTYPE_BOOL:
    visit(uint8_t());
    return true;
  default:
    return false;
  }
}

/// `to` (the cast kernel's int argument) as a dtype when the cast kernels
/// convert `from` to it; else nullopt, with the error naming both dtypes
/// recorded in `frame`.
std::optional<pp_dtype> checkCast(pp_frame *frame, pp_dtype from, int to);

/// `value` as a number: a 16-bit float element as the float it holds, any
/// other value as it is.
template <typename T> PP_HOST_DEVICE auto numberOf(T value) {
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>)
    return toFloat(value);
  else
    return value;
}

/// `value` converted as nn.cast converts: a bool (uint8_t) is "nonzero",
/// a float becomes an integer by truncation toward zero, and a number
/// becomes a 16-bit float through float (as PyTorch converts), rounded to
/// nearest even.
template <typename To, typename From>
PP_HOST_DEVICE To castElement(From value) {
  auto number = numberOf(value);
  if constexpr (std::is_same_v<To, uint8_t>)
    return number != decltype(number)(0);
  else if constexpr (std::is_same_v<To, BFloat16>)
    return toBFloat16(static_cast<float>(number));
  else if constexpr (std::is_same_v<To, Half>)
    return toHalf(static_cast<float>(number));
  else
    return static_cast<To>(number);
}

/// Calls `visit(T())` with an unsigned integer type of `size` bytes (1, 2,
/// 4 or 8), for kernels that move elements of any dtype without reading
/// them.
template <typename Visit> void visitBits(size_t size, Visit &&visit) {
  switch (size) {
  case 1:
    visit(uint8_t());
    break;
  case 2:
    visit(uint16_t());
    break;
  case 4:
    visit(uint32_t());
    break;
  default:
    visit(uint64_t());
    break;
  }
}

/// Where the microbatch of a call sits in the run; dropout keys its masks
/// by it. The trainer sets it for every call; the default is a
/// forward-only call, in which dropout is the identity.
struct RunPosition {
  /// The run's seed (pp-run --seed).
  uint64_t seed = 0;
  /// The training step, from 0.
  int64_t step = 0;
  /// The global index of the microbatch's first sample (dimension 0).
  int64_t firstSample = 0;
  /// Training (dropout drops) or forward-only (dropout is the identity).
  bool training = false;
};

} // namespace pp::runtime

/// The arguments a stage function borrows, the results it hands back, and
/// where its messages go.
struct pp_frame {
  std::vector<pp_tensor *> args;
  std::vector<pp_tensor *> results;
  pp::runtime::MessageChannel *channel = nullptr;
  /// The groups of the stage function's collectives by the mesh axes they
  /// span, keyed as the generated calls name them (collectiveAxesKey in
  /// CollectiveAxes.h: the axes' names in the IR's order, joined by ","); a
  /// collective over axes without a group fails the frame.
  std::map<std::string, pp::runtime::CollectiveGroup *, std::less<>>
      collectiveGroups;
  /// The one group of a caller that keys no groups (a hand-written stage
  /// function's test): while `collectiveGroups` is empty, every collective
  /// runs on it. The trainer keys its groups.
  pp::runtime::CollectiveGroup *collectives = nullptr;
  /// The queue the stage function's work runs on, on the device it runs
  /// on: kernels and receives allocate in its order (its
  /// tensorAllocator), CUDA kernels launch on its stream. Null for the
  /// host, with zero-filled memory (a frame that no backend configured).
  pp::runtime::Queue *queue = nullptr;
  /// Serves the call's allocations by its memory plan; null for none (all
  /// from the queue's allocator). After a failure the plan's order no
  /// longer holds: allocations come from the queue's allocator.
  pp::runtime::MemoryArena *arena = nullptr;
  /// Tensors this call allocated from the queue's allocator (not from the
  /// arena).
  int64_t heapAllocations = 0;
  pp::runtime::RunPosition position;
  std::string error;
  /// Where pp_frame_profile_begin/end add their times; null when no profile
  /// was asked for.
  pp::runtime::OpProfile *profile = nullptr;
  /// Called by pp_frame_result with each result as the code hands it over
  /// (the frame still owns it, unless the callback empties its slot: the
  /// trainer frees a gradient it has added to its sum), so that the caller
  /// can use a result while the function computes the next; unset when the
  /// caller waits for the function to return. An error it records with
  /// failFrame fails the call (reported when the function returns).
  std::function<void(int64_t index, pp_tensor *result)> onResult;
  /// The sum gradient result `index` adds into over the step, zeroed before
  /// its first contribution (pp_frame_gradient_sum), and the call saying a
  /// result was added into it (pp_frame_gradient_added); unset when the
  /// caller takes results rather than sums.
  std::function<pp_tensor *(int64_t index)> gradientSum;
  std::function<void(int64_t index)> gradientAdded;
  /// Gives argument `index` up to the call (pp_frame_take_arg): the
  /// caller forgets it and returns it, or returns null where it keeps it (the
  /// call then takes a copy); unset, every take copies.
  std::function<pp_tensor *(int64_t index)> takeArg;
  /// Without gradientSum: the zeroed tensors pp_frame_gradient_sum made,
  /// which pp_frame_gradient_added hands over as results.
  std::map<int64_t, pp_tensor *> madeSums;

  pp_frame() = default;
  pp_frame(const pp_frame &) = delete;
  pp_frame &operator=(const pp_frame &) = delete;
  /// Destroys results nobody took.
  ~pp_frame();
};

#endif // PP_RUNTIME_FRAME_H

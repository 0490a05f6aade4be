//===- Frame.h - one call of a generated stage function ---------*- C++ -*-===//

#ifndef PP_RUNTIME_FRAME_H
#define PP_RUNTIME_FRAME_H

#include "runtime/core/Shapes.h"
#include "runtime/pp_kernels.h"

#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

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
};

/// Creates a tensor for a kernel, recording any failure in `frame`; null on
/// failure.
pp_tensor *newTensor(pp_frame *frame, pp_dtype dtype,
                     const std::vector<int64_t> &shape);

/// Records the first error of a call.
void failFrame(pp_frame *frame, const std::string &message);

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

} // namespace pp::runtime

/// The arguments a stage function borrows, the results it hands back, and
/// where its messages go.
struct pp_frame {
  std::vector<pp_tensor *> args;
  std::vector<pp_tensor *> results;
  pp::runtime::MessageChannel *channel = nullptr;
  /// Where kernels and receives allocate; null for host memory.
  const pp_allocator *allocator = nullptr;
  std::string error;

  pp_frame() = default;
  pp_frame(const pp_frame &) = delete;
  pp_frame &operator=(const pp_frame &) = delete;
  /// Destroys results nobody took.
  ~pp_frame();
};

#endif // PP_RUNTIME_FRAME_H

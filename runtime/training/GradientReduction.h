//===- GradientReduction.h - data-parallel gradient sums --------*- C++ -*-===//
//
// Sums a stage's gradients over its data-parallel group: the replicas of
// the stage that hold the same parameters and trained on other samples.
// The all-reduces run on a communication thread and a queue of their own,
// on the device where the gradients are, while the backward goes on.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GRADIENTREDUCTION_H
#define PP_RUNTIME_GRADIENTREDUCTION_H

#include "runtime/communication/CollectiveGroup.h"
#include "runtime/device/Buffer.h"
#include "runtime/device/Device.h"
#include "runtime/pp_runtime.h"
#include "runtime/training/ReduceDtype.h"
#include "runtime/training/StateKernels.h"

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace pp::runtime {

/// Where the reduction leaves each gradient's sums: on every rank, or
/// (ZeRO-2 and up) on the owners of the shares of the flat buffer the
/// gradient lies in (a stage's, FlatParameters.h).
struct GradientShares {
  /// Per listed gradient, its first element's position in its flat buffer,
  /// or -1 for a gradient every rank needs whole (one a tied parameter's
  /// holders exchange). Empty: every gradient whole.
  std::vector<int64_t> flatOffsets;
  /// Per listed gradient, the share of its flat buffer: rank r owns the
  /// positions [r * share, (r + 1) * share).
  std::vector<int64_t> shareSizes;
};

/// Bytes of gradients one all-reduce carries at most (as DDP's 25 MiB
/// buckets, smaller for the models a CPU trains).
constexpr size_t kGradientBucketBytes = size_t(4) << 20;

/// Replaces each f32 tensor of a list of gradients, every step, by its
/// element-wise sum over the ranks of a data-parallel group (every rank
/// lists the same tensors in the same order). Consecutive tensors travel
/// together in buckets of up to `bucketBytes` (a larger tensor alone), one
/// all-reduce per bucket. A bucket's all-reduce starts on a communication
/// thread once each of its tensors is final (ready()), while the caller
/// computes the rest of the backward; finish() reduces those it has not
/// started yet itself. Buckets are reduced last first (the
/// order in which a backward finishes them), the same order on every rank;
/// since a bucket's contents and an all-reduce's order of additions do not
/// depend on when it starts, every rank ends with the same bits as a
/// blocking reduction after the backward. Nothing happens in a group of
/// one. In bf16 (ReduceDtype) a bucket's gradients are rounded to bf16 on
/// their device, their sums (CollectiveGroup's bf16 sums: half the bytes)
/// widened back to f32. With GradientShares, a bucket's sharded gradients are
/// reduce-scattered instead: each rank receives the sums of the elements
/// it owns, on the host the bits the all-reduce gives them (NCCL adds in
/// orders of its own: on GPUs the two agree for two replicas, whose sum
/// has one order). The gradients live on the
/// device of a compute queue, whose work writes them: a bucket's reduction
/// waits for the work queued there before its last gradient was ready, and
/// the work queued there after finish() waits for the reduction.
class GradientReducer {
public:
  /// Reduces `gradients` (tensors on `compute`'s device that outlive this
  /// object) over `dataParallel`, which no other thread uses between
  /// begin() and finish(), leaving each gradient's sums where `shares`
  /// says, carried and summed in `dtype`; bf16 needs `kernels`, those of
  /// `compute`'s device, which round the gradients and widen the sums
  /// (std::invalid_argument without). `bucketBytes` counts f32 bytes.
  GradientReducer(CollectiveGroup &dataParallel,
                  std::vector<pp_tensor *> gradients, size_t bucketBytes,
                  GradientShares shares, Queue &compute,
                  ReduceDtype dtype = ReduceDtype::F32,
                  StateKernels *kernels = nullptr);
  /// Waits for a reduction in flight to end.
  ~GradientReducer();
  GradientReducer(const GradientReducer &) = delete;
  GradientReducer &operator=(const GradientReducer &) = delete;

  /// Starts a step's reduction: every gradient is pending.
  void begin();
  /// Says that gradient `index` (of the list) holds its final value for
  /// the step once the work queued on the compute queue so far is done;
  /// its bucket is reduced once all of its gradients are.
  void ready(size_t index);
  /// Marks the gradients still pending final and waits until every bucket
  /// is queued for summing, and makes the compute queue's work after wait
  /// for the sums. Throws std::runtime_error with the communication thread's
  /// failure, if it failed.
  void finish();

  /// Seconds the communication thread spent in all-reduces so far.
  double reducingSeconds() const;
  /// Bytes of values a step hands to the group's sums (each rank's: the
  /// gradients' elements times 4 in f32, 2 in bf16; 0 in a group of one).
  size_t bytesPerStep() const;

private:
  struct Bucket {
    /// Its gradients [first, last) and how many are still pending.
    size_t first = 0, last = 0, pending = 0;
  };
  /// The communication thread: reduces the buckets of each step in order.
  void run();
  /// Whether the next bucket (in the last-first order) is complete and no
  /// reduction is in flight (the caller holds `mutex`).
  bool canStartNext() const;
  /// Reduces the next bucket, releasing `lock` meanwhile.
  void reduceNext(std::unique_lock<std::mutex> &lock);
  /// Sums bucket `bucket` over the group, in place.
  void reduce(const Bucket &bucket);
  /// reduce() with the bucket's values staged as T (float or BFloat16).
  template <typename T> void reduceAs(const Bucket &bucket);
  /// Stages gradient `index`'s `n` values at `at`, rounded to bf16 or not,
  /// and writes a staged sum back to it.
  void stage(float *at, size_t index, size_t n);
  void stage(BFloat16 *at, size_t index, size_t n);
  void unstage(size_t index, const float *at, size_t n);
  void unstage(size_t index, const BFloat16 *at, size_t n);

  CollectiveGroup &dataParallel;
  std::vector<pp_tensor *> gradients;
  GradientShares shares;
  Queue &compute;
  ReduceDtype dtype;
  StateKernels *kernels;
  /// Where the reductions run, and the point of its work that the compute
  /// queue waits for at finish().
  std::unique_ptr<Queue> reduction;
  std::unique_ptr<Event> reductionDone;
  std::vector<Bucket> buckets;
  /// The bucket of each gradient, and per bucket the point of the compute
  /// queue's work after which its gradients are final.
  std::vector<size_t> bucketOf;
  std::vector<std::unique_ptr<Event>> finalized;
  /// Staging for one bucket's values on the gradients' device (used by the
  /// communication thread).
  std::optional<Buffer> staging;

  /// Guards what follows; `changed` signals both threads.
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> isReady;
  /// Buckets whose reduction started, and those reduced, this step (they
  /// go from the last to the first; one at a time, by the communication
  /// thread or by finish()), and whether a step is open.
  size_t started = 0, reduced = 0;
  bool open = false;
  bool stopping = false;
  std::exception_ptr failure;
  double seconds = 0;
  std::thread worker;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_GRADIENTREDUCTION_H

//===- GradientReduction.h - data-parallel gradient sums --------*- C++ -*-===//
//
// Sums a stage's gradients over its data-parallel group: the replicas of
// the stage that hold the same parameters and trained on other samples.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GRADIENTREDUCTION_H
#define PP_RUNTIME_GRADIENTREDUCTION_H

#include "runtime/communication/Communicator.h"
#include "runtime/pp_runtime.h"

#include <cstddef>
#include <vector>

namespace pp::runtime {

/// Bytes of gradients one all-reduce carries at most (as DDP's 25 MiB
/// buckets, smaller for the models a CPU trains).
constexpr size_t kGradientBucketBytes = size_t(4) << 20;

/// Replaces each f32 host tensor of `gradients` by its element-wise sum
/// over the ranks of `dataParallel` (every rank lists the same tensors in
/// the same order). Consecutive tensors travel together in buckets of up
/// to `bucketBytes` (a larger tensor alone), one all-reduce per bucket, so
/// that a stage's reduction starts as soon as its own backward is done,
/// whatever the other stages are computing. Every rank ends with the same
/// bits. Nothing happens in a group of one.
void allReduceGradients(Communicator &dataParallel,
                        const std::vector<pp_tensor *> &gradients,
                        size_t bucketBytes = kGradientBucketBytes);

} // namespace pp::runtime

#endif // PP_RUNTIME_GRADIENTREDUCTION_H

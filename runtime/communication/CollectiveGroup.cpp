//===- CollectiveGroup.cpp - collectives over a group of ranks ------------===//

#include "runtime/communication/CollectiveGroup.h"
#include "runtime/kernels/FloatElements.h"

#include <stdexcept>
#include <string>

namespace pp::runtime {
namespace {

/// Sets `values[i]`, for i in [first, last), to the sum of every member's
/// element i in `all` (the members' `count` values each, in group order),
/// widened to float and added in group order, rounded once to T.
template <typename T>
void addMembers(const std::vector<T> &all, size_t count, int64_t members,
                size_t first, size_t last, T *values) {
  for (size_t i = first; i < last; ++i) {
    float sum = loadFloat(all[i]);
    for (int64_t member = 1; member < members; ++member)
      sum += loadFloat(all[member * count + i]);
    values[i] = storeFloat<T>(sum);
  }
}

} // namespace

bool CollectiveGroup::reaches(const Device &device) const {
  return device.deviceKind() == PP_DEVICE_CPU;
}

void CollectiveGroup::checkReaches(const Queue &queue) const {
  if (!reaches(queue.device()))
    throw std::logic_error("a collective group of host memory was given "
                           "memory of " +
                           queue.device().name());
}

template <typename T>
void CollectiveGroup::gatheredSum(T *values, size_t count,
                                  const std::vector<OwnedRange> *ranges,
                                  Queue &queue) {
  checkReaches(queue);
  if (ranges)
    checkOwnedRanges(*ranges, count, static_cast<int>(size()));
  std::vector<T> all(count * size());
  allGather(values, count * sizeof(T), all.data(), queue);
  if (!ranges)
    return addMembers(all, count, size(), 0, count, values);
  for (const OwnedRange &range : *ranges)
    if (range.owner == rank())
      addMembers(all, count, size(), range.begin, range.begin + range.count,
                 values);
}

void CollectiveGroup::allReduceSum(float *values, size_t count,
                                   Queue &queue) {
  gatheredSum(values, count, nullptr, queue);
}

void CollectiveGroup::reduceScatterSum(float *values, size_t count,
                                       const std::vector<OwnedRange> &ranges,
                                       Queue &queue) {
  gatheredSum(values, count, &ranges, queue);
}

void CollectiveGroup::allReduceSum(BFloat16 *values, size_t count,
                                   Queue &queue) {
  gatheredSum(values, count, nullptr, queue);
}

void CollectiveGroup::reduceScatterSum(BFloat16 *values, size_t count,
                                       const std::vector<OwnedRange> &ranges,
                                       Queue &queue) {
  gatheredSum(values, count, &ranges, queue);
}

} // namespace pp::runtime

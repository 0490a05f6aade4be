//===- CollectiveGroup.cpp - collectives over a group of ranks ------------===//

#include "runtime/communication/CollectiveGroup.h"

#include <stdexcept>
#include <string>

namespace pp::runtime {
namespace {

/// Sets `values[i]`, for i in [first, last), to the sum of every member's
/// element i in `all` (the members' `count` values each, in group order),
/// added in group order.
void addMembers(const std::vector<float> &all, size_t count, int64_t members,
                size_t first, size_t last, float *values) {
  for (size_t i = first; i < last; ++i) {
    float sum = all[i];
    for (int64_t member = 1; member < members; ++member)
      sum += all[member * count + i];
    values[i] = sum;
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

void CollectiveGroup::allReduceSum(float *values, size_t count,
                                   Queue &queue) {
  checkReaches(queue);
  std::vector<float> all(count * size());
  allGather(values, count * sizeof(float), all.data(), queue);
  addMembers(all, count, size(), 0, count, values);
}

void CollectiveGroup::reduceScatterSum(float *values, size_t count,
                                       const std::vector<OwnedRange> &ranges,
                                       Queue &queue) {
  checkReaches(queue);
  checkOwnedRanges(ranges, count, static_cast<int>(size()));
  std::vector<float> all(count * size());
  allGather(values, count * sizeof(float), all.data(), queue);
  for (const OwnedRange &range : ranges)
    if (range.owner == rank())
      addMembers(all, count, size(), range.begin, range.begin + range.count,
                 values);
}

} // namespace pp::runtime

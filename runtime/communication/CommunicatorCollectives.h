//===- CommunicatorCollectives.h - a group over a communicator --*- C++ -*-===//
//
// The CollectiveGroup of a Communicator's ranks on host memory: the
// collectives run at once, on the caller's thread, over the job's
// authenticated links (TCP), with the communicator's bits.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATORCOLLECTIVES_H
#define PP_RUNTIME_COMMUNICATORCOLLECTIVES_H

#include "runtime/communication/CollectiveGroup.h"
#include "runtime/communication/Communicator.h"

namespace pp::runtime {

/// The ranks of `group` as a CollectiveGroup: its rank, size and
/// collectives are the communicator's.
class CommunicatorCollectives : public CollectiveGroup {
public:
  explicit CommunicatorCollectives(Communicator &group) : group(group) {}

  int64_t rank() const override { return group.rank(); }
  int64_t size() const override { return group.worldSize(); }
  void allGather(const void *mine, size_t bytes, void *all,
                 Queue &queue) override {
    checkReaches(queue);
    group.allGatherBytes(mine, bytes, all);
  }
  void allReduceSum(float *values, size_t count, Queue &queue) override {
    checkReaches(queue);
    group.allReduceSum(values, count);
  }
  void allReduceSum(BFloat16 *values, size_t count, Queue &queue) override {
    checkReaches(queue);
    group.allReduceSum(values, count);
  }
  void reduceScatterSum(float *values, size_t count,
                        const std::vector<OwnedRange> &ranges,
                        Queue &queue) override {
    checkReaches(queue);
    group.reduceScatterSum(values, count, ranges);
  }
  void reduceScatterSum(BFloat16 *values, size_t count,
                        const std::vector<OwnedRange> &ranges,
                        Queue &queue) override {
    checkReaches(queue);
    group.reduceScatterSum(values, count, ranges);
  }

private:
  Communicator &group;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATORCOLLECTIVES_H

//===- CommunicatorCollectives.h - a frame's group over ranks ---*- C++ -*-===//
//
// The CollectiveGroup a stage function's collectives run on (Frame.h),
// backed by a Communicator over the ranks of a tensor-parallel group.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_COMMUNICATORCOLLECTIVES_H
#define PP_RUNTIME_COMMUNICATORCOLLECTIVES_H

#include "runtime/communication/Communicator.h"
#include "runtime/kernels/Frame.h"

namespace pp::runtime {

/// The ranks of `group` as a frame's CollectiveGroup: its rank, size and
/// all-gather are the communicator's.
class CommunicatorCollectives : public CollectiveGroup {
public:
  explicit CommunicatorCollectives(Communicator &group) : group(group) {}

  int64_t rank() const override { return group.rank(); }
  int64_t size() const override { return group.worldSize(); }
  void allGather(const void *mine, size_t bytes, void *all) override {
    group.allGatherBytes(mine, bytes, all);
  }

private:
  Communicator &group;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_COMMUNICATORCOLLECTIVES_H

//===- HostCollectives.cpp - device collectives on host memory ------------===//
//
// DeviceCollectives for the host: a host queue runs its work at once, so
// each collective is the Communicator's, on the caller's thread.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/DeviceCollectives.h"

namespace pp::runtime {
namespace {

class HostCollectives : public DeviceCollectives {
public:
  explicit HostCollectives(Communicator &ranks) : ranks(ranks) {}

  int rank() const override { return ranks.rank(); }
  int size() const override { return ranks.worldSize(); }

  void allReduceSum(float *values, size_t count, Queue &) override {
    ranks.allReduceSum(values, count);
  }

  void reduceScatterSum(float *values, size_t count,
                        const std::vector<OwnedRange> &ranges,
                        Queue &) override {
    ranks.reduceScatterSum(values, count, ranges);
  }

  void allGather(const float *mine, size_t count, float *all,
                 Queue &) override {
    ranks.allGather(mine, count, all);
  }

private:
  Communicator &ranks;
};

} // namespace

std::unique_ptr<DeviceCollectives> hostCollectives(Communicator &ranks) {
  return std::make_unique<HostCollectives>(ranks);
}

} // namespace pp::runtime

//===- StageRouter.h - a rank's stage messages, by stage --------*- C++ -*-===//
//
// The stage functions send to and receive from stages; with virtual stages
// a rank runs several. The router hands a message between two stages of
// this rank over in memory and one to a stage elsewhere to the backend's
// transport, addressed to that stage's rank.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_STAGEROUTER_H
#define PP_RUNTIME_STAGEROUTER_H

#include "runtime/kernels/Frame.h"
#include "runtime/training/Backend.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace pp::runtime {

class StageRouter : public MessageChannel {
public:
  /// Routes for `rank`, where stage s runs on stageRanks[s]. Messages
  /// between stages of this rank are host tensors (the CPU backend).
  StageRouter(std::vector<int64_t> stageRanks, int64_t rank);

  /// Routes the messages of the next stage function call, microbatch
  /// `microbatch` of the batch with message step `step`, over `transport`
  /// (the backend's channel, addressed by rank).
  void prepare(MessageChannel *transport, int64_t step, int64_t microbatch);

  void send(int64_t stage, const std::string &name,
            const pp_tensor &tensor) override;
  std::string recv(int64_t stage, const std::string &name,
                   pp_tensor &tensor) override;
  std::string await(int64_t stage, const std::string &name) override;

  /// Seconds spent in the transport's sends since the last call: the send
  /// span the trace puts at the end of the compute that sent.
  double takeSendSeconds();

private:
  /// Whether stage `stage` runs on this rank.
  bool isLocal(int64_t stage) const { return stageRanks.at(stage) == rank; }
  /// Why a message `name` from `stage` of this rank is not there.
  std::string notProduced(int64_t stage, const std::string &name) const;

  using Key = std::tuple<int64_t, int64_t, std::string>;

  std::vector<int64_t> stageRanks;
  int64_t rank;
  MessageChannel *transport = nullptr;
  int64_t step = 0, microbatch = 0;
  /// Messages to stages of this rank not yet received, by (step,
  /// microbatch, name): names are unique in a package.
  std::map<Key, TensorPtr> local;
  double sendSeconds = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_STAGEROUTER_H

//===- StageRouter.h - a rank's stage messages, by stage --------*- C++ -*-===//
//
// The stage functions send to and receive from stages; with virtual stages
// a rank runs several. The router hands a message between two stages of
// this rank over in memory. One to a stage elsewhere it holds, a copy on
// the rank's device, until the row's Send action of the compute action
// that produced it, which hands it to the backend's transport, addressed
// to that stage's rank: the action table says when messages leave.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_STAGEROUTER_H
#define PP_RUNTIME_STAGEROUTER_H

#include "runtime/kernels/Frame.h"
#include "runtime/schedules/Schedule.h"
#include "runtime/training/Backend.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace pp::runtime {

class StageRouter : public MessageChannel {
public:
  /// Routes for `rank`, where stage s runs on stageRanks[s].
  StageRouter(std::vector<int64_t> stageRanks, int64_t rank);

  /// Routes the messages of what comes next for `action` (a compute
  /// action's stage function calls, or a Recv's waits) of the batch with
  /// message step `step`, in `frame`, which the backend configured for the
  /// action's microbatch: it receives over the frame's channel and copies
  /// on its queue.
  void prepare(const pp_frame &frame, int64_t step, const Action &action);

  /// Holds `tensor` for a stage on another rank until the Send of the
  /// prepared action; hands it to a stage of this rank in memory.
  void send(int64_t stage, const std::string &name,
            const pp_tensor &tensor) override;
  std::string recv(int64_t stage, const std::string &name,
                   pp_tensor &tensor) override;
  std::string await(int64_t stage, const std::string &name) override;

  /// Whether the messages that the prepared action produces for other ranks
  /// leave as it produces them, without a copy: when the row places its
  /// Send right after it, nothing runs between the two but the rest of the
  /// action, and sending earlier never makes a rank wait longer.
  void sendAtOnce(bool atOnce) { sendsAtOnce = atOnce; }

  /// Hands the messages held for the compute action of Send action `send`
  /// to `transport` (the backend's channel, configured for its microbatch),
  /// in the order they were produced. Throws std::runtime_error when that
  /// action produced none for other ranks.
  void sendHeld(const Action &send, MessageChannel &transport);
  /// The messages still held at the end of a step, whose Send never came,
  /// as an error naming rank, stage and microbatch; "" when none are.
  std::string unsent() const;

private:
  /// Whether stage `stage` runs on this rank.
  bool isLocal(int64_t stage) const { return stageRanks.at(stage) == rank; }
  /// Why a message `name` from `stage` of this rank is not there.
  std::string notProduced(int64_t stage, const std::string &name) const;
  /// A copy of `tensor`, message `name` for `stage`, on the prepared queue.
  TensorPtr copyOf(int64_t stage, const std::string &name,
                   const pp_tensor &tensor);

  /// A message to a stage on another rank, waiting for its Send.
  struct HeldMessage {
    int64_t toRank;
    std::string name;
    TensorPtr tensor;
  };
  /// Message class, stage and microbatch of the compute action that
  /// produced a message (a Send names the same).
  using ActionKey = std::tuple<ActionKind, int64_t, int64_t>;
  static ActionKey keyOf(const Action &action);
  using Key = std::tuple<int64_t, int64_t, std::string>;

  std::vector<int64_t> stageRanks;
  int64_t rank;
  MessageChannel *transport = nullptr;
  Queue *queue = nullptr;
  int64_t step = 0;
  /// The prepared action: the producer of what send() holds.
  Action producer;
  /// Messages to stages of this rank not yet received, by (step,
  /// microbatch, name): names are unique in a package.
  std::map<Key, TensorPtr> local;
  /// Messages to stages on other ranks, by the action that produced them,
  /// in the order it did; the actions whose messages left at once.
  std::map<ActionKey, std::vector<HeldMessage>> held;
  std::set<ActionKey> sentAtOnce;
  bool sendsAtOnce = false;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_STAGEROUTER_H

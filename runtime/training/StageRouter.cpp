//===- StageRouter.cpp - a rank's stage messages, by stage ----------------===//

#include "runtime/training/StageRouter.h"

#include "runtime/device/Queue.h"
#include "runtime/schedules/ActionMessages.h"

#include <stdexcept>
#include <utility>

namespace pp::runtime {

StageRouter::StageRouter(std::vector<int64_t> stageRanks, int64_t rank)
    : stageRanks(std::move(stageRanks)), rank(rank) {}

void StageRouter::prepare(const pp_frame &frame, int64_t step,
                          const Action &action) {
  transport = frame.channel;
  queue = frame.queue;
  this->step = step;
  producer = action;
}

StageRouter::ActionKey StageRouter::keyOf(const Action &action) {
  ActionKind kind = computeKindOf(action);
  return {messageClass(kind).value_or(kind), action.stage, action.microbatch};
}

TensorPtr StageRouter::copyOf(int64_t stage, const std::string &name,
                              const pp_tensor &tensor) {
  pp_tensor *created = nullptr;
  if (pp_tensor_create_in(&queue->tensorAllocator(), pp_tensor_dtype(&tensor),
                          pp_tensor_rank(&tensor), pp_tensor_shape(&tensor),
                          &created) != PP_OK)
    throw std::runtime_error("cannot hold '" + name + "' for stage " +
                             std::to_string(stage) + ": " + pp_last_error());
  TensorPtr copy(created);
  queue->copy(pp_tensor_data(copy.get()),
              pp_tensor_data(const_cast<pp_tensor *>(&tensor)),
              pp_tensor_nbytes(&tensor));
  return copy;
}

void StageRouter::send(int64_t stage, const std::string &name,
                       const pp_tensor &tensor) {
  if (sendsAtOnce && !isLocal(stage)) {
    transport->send(stageRanks.at(stage), name, tensor);
    sentAtOnce.insert(keyOf(producer));
    return;
  }
  TensorPtr copy = copyOf(stage, name, tensor);
  if (isLocal(stage))
    local[{step, producer.microbatch, name}] = std::move(copy);
  else
    held[keyOf(producer)].push_back(
        {stageRanks.at(stage), name, std::move(copy)});
}

void StageRouter::sendHeld(const Action &send, MessageChannel &transport) {
  if (sentAtOnce.erase(keyOf(send)))
    return;
  auto it = held.find(keyOf(send));
  if (it == held.end())
    throw std::runtime_error(
        "rank " + std::to_string(rank) + " at " + formatAction(send) +
        ": stage " + std::to_string(send.stage) + " has produced no messages "
        "for other ranks in microbatch " + std::to_string(send.microbatch) +
        " yet; a send follows its compute action");
  for (HeldMessage &message : it->second)
    transport.send(message.toRank, message.name, *message.tensor);
  held.erase(it);
}

std::string StageRouter::unsent() const {
  if (held.empty())
    return "";
  const auto &[key, messages] = *held.begin();
  Action compute;
  std::tie(compute.kind, compute.stage, compute.microbatch) = key;
  Action send = compute;
  send.kind = ActionKind::Send;
  send.of = compute.kind;
  return "rank " + std::to_string(rank) +
         " ended its step still holding the messages of " +
         describeAction(compute) + " (stage " + std::to_string(compute.stage) +
         ", microbatch " + std::to_string(compute.microbatch) + ") for rank " +
         std::to_string(messages.front().toRank) + ": its row has no " +
         formatAction(send) + " after that action";
}

std::string StageRouter::recv(int64_t stage, const std::string &name,
                              pp_tensor &tensor) {
  if (!isLocal(stage))
    return transport->recv(stageRanks.at(stage), name, tensor);
  auto it = local.find({step, producer.microbatch, name});
  if (it == local.end())
    return notProduced(stage, name);
  if (pp_tensor_nbytes(it->second.get()) != pp_tensor_nbytes(&tensor))
    return "'" + name + "' from stage " + std::to_string(stage) + " has " +
           std::to_string(pp_tensor_nbytes(it->second.get())) +
           " bytes where " + std::to_string(pp_tensor_nbytes(&tensor)) +
           " were expected";
  queue->copy(pp_tensor_data(&tensor), pp_tensor_data(it->second.get()),
              pp_tensor_nbytes(&tensor));
  local.erase(it);
  return "";
}

std::string StageRouter::await(int64_t stage, const std::string &name) {
  if (isLocal(stage))
    return local.count({step, producer.microbatch, name})
               ? ""
               : notProduced(stage, name);
  return transport->await(stageRanks.at(stage), name);
}

std::string StageRouter::notProduced(int64_t stage,
                                     const std::string &name) const {
  return "stage " + std::to_string(stage) + " has not produced '" + name +
         "' for microbatch " + std::to_string(producer.microbatch) +
         " yet: the schedule runs its consumer first";
}

} // namespace pp::runtime

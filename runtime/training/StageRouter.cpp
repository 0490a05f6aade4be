//===- StageRouter.cpp - a rank's stage messages, by stage ----------------===//

#include "runtime/training/StageRouter.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace pp::runtime {

StageRouter::StageRouter(std::vector<int64_t> stageRanks, int64_t rank)
    : stageRanks(std::move(stageRanks)), rank(rank) {}

void StageRouter::prepare(MessageChannel *transport, int64_t step,
                          int64_t microbatch) {
  this->transport = transport;
  this->step = step;
  this->microbatch = microbatch;
}

void StageRouter::send(int64_t stage, const std::string &name,
                       const pp_tensor &tensor) {
  if (!isLocal(stage)) {
    auto start = std::chrono::steady_clock::now();
    transport->send(stageRanks.at(stage), name, tensor);
    sendSeconds += std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    return;
  }
  pp_tensor *created = nullptr;
  if (pp_tensor_create(pp_tensor_dtype(&tensor), pp_tensor_rank(&tensor),
                       pp_tensor_shape(&tensor), &created) != PP_OK)
    throw std::runtime_error("cannot hold '" + name + "' for stage " +
                             std::to_string(stage) + ": " + pp_last_error());
  TensorPtr copy(created);
  std::memcpy(pp_tensor_data(copy.get()),
              pp_tensor_data(const_cast<pp_tensor *>(&tensor)),
              pp_tensor_nbytes(&tensor));
  local[{step, microbatch, name}] = std::move(copy);
}

std::string StageRouter::recv(int64_t stage, const std::string &name,
                              pp_tensor &tensor) {
  if (!isLocal(stage))
    return transport->recv(stageRanks.at(stage), name, tensor);
  auto it = local.find({step, microbatch, name});
  if (it == local.end())
    return notProduced(stage, name);
  if (pp_tensor_nbytes(it->second.get()) != pp_tensor_nbytes(&tensor))
    return "'" + name + "' from stage " + std::to_string(stage) + " has " +
           std::to_string(pp_tensor_nbytes(it->second.get())) +
           " bytes where " + std::to_string(pp_tensor_nbytes(&tensor)) +
           " were expected";
  std::memcpy(pp_tensor_data(&tensor), pp_tensor_data(it->second.get()),
              pp_tensor_nbytes(&tensor));
  local.erase(it);
  return "";
}

std::string StageRouter::await(int64_t stage, const std::string &name) {
  if (isLocal(stage))
    return local.count({step, microbatch, name}) ? "" : notProduced(stage, name);
  return transport->await(stageRanks.at(stage), name);
}

std::string StageRouter::notProduced(int64_t stage,
                                     const std::string &name) const {
  return "stage " + std::to_string(stage) + " has not produced '" + name +
         "' for microbatch " + std::to_string(microbatch) +
         " yet: the schedule runs its consumer first";
}

double StageRouter::takeSendSeconds() {
  return std::exchange(sendSeconds, 0.0);
}

} // namespace pp::runtime

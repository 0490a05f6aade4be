//===- ActivationOffload.cpp - saved values held outside until needed -----===//

#include "runtime/training/ActivationOffload.h"

#include "runtime/device/Device.h"

#include <algorithm>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// "stage 1, microbatch 3", for messages.
std::string microbatchName(int64_t stage, int64_t microbatch) {
  return "stage " + std::to_string(stage) + ", microbatch " +
         std::to_string(microbatch);
}

/// A tensor shaped like `like` from `allocator`, uninitialized; `what`
/// says what it is for, in the error when memory runs out.
TensorPtr tensorLike(pp_tensor *like, const pp_allocator &allocator,
                     const std::string &what) {
  pp_tensor *tensor = nullptr;
  if (pp_tensor_create_in(&allocator, pp_tensor_dtype(like),
                          pp_tensor_rank(like), pp_tensor_shape(like),
                          &tensor) != PP_OK)
    throw std::runtime_error("cannot " + what + ": no " +
                             std::to_string(pp_tensor_nbytes(like)) +
                             " bytes left there; run with fewer microbatches "
                             "in flight or without --offload-activations");
  return TensorPtr(tensor);
}

} // namespace

ActivationOffload::ActivationOffload(Queue &compute) : compute(compute) {}

ActivationOffload::~ActivationOffload() {
  // The copies may still read or write the memory this frees; a device
  // that failed (its error already reported) has nothing left to wait for.
  if (copies) {
    try {
      copies->synchronize();
    } catch (const std::exception &) {
    }
  }
}

void ActivationOffload::copiesAfterCompute() {
  // The copy queue and its event, made at the first offload: a run without
  // offload makes neither.
  if (!copies) {
    copies = compute.device().createQueue();
    computeMark = compute.device().createEvent();
  }
  compute.record(*computeMark);
  copies->wait(*computeMark);
}

void ActivationOffload::freeCopiedOut() {
  for (auto it = copyingOut.begin(); it != copyingOut.end();)
    it = it->second->isDone() ? copyingOut.erase(it) : std::next(it);
}

void ActivationOffload::offload(int64_t stage, int64_t microbatch,
                                SavedValues &values) {
  if (offloaded.count({stage, microbatch}))
    throw std::runtime_error("the saved values of " +
                             microbatchName(stage, microbatch) +
                             " are offloaded twice");
  freeCopiedOut();
  // Every host copy first: running out of memory leaves nothing half done.
  const pp_allocator &host = hostDevice().defaultQueue().tensorAllocator();
  Offloaded out;
  for (auto &[name, value] : values)
    out.host.emplace(name, tensorLike(value.get(), host,
                                      "offload the saved values of " +
                                          microbatchName(stage, microbatch) +
                                          " to host memory"));
  // The copies read the values once the forward that made them is done.
  copiesAfterCompute();
  for (auto &[name, value] : values) {
    size_t bytes = pp_tensor_nbytes(value.get());
    copies->copy(pp_tensor_data(out.host.at(name).get()),
                 pp_tensor_data(value.get()), bytes);
    out.bytes += static_cast<int64_t>(bytes);
  }
  // The values' memory is freed once the copies have read it.
  std::unique_ptr<Event> copiedOut = compute.device().createEvent();
  copies->record(*copiedOut);
  copyingOut.emplace_back(std::move(values), std::move(copiedOut));
  values.clear();
  freeCopiedOut();
  held += out.bytes;
  copied += out.bytes;
  mostHeld = std::max(mostHeld, held);
  offloaded.emplace(std::make_pair(stage, microbatch), std::move(out));
}

void ActivationOffload::reload(int64_t stage, int64_t microbatch) {
  auto entry = offloaded.find({stage, microbatch});
  if (entry == offloaded.end() || entry->second.copiedBack)
    throw std::runtime_error("reload of " + microbatchName(stage, microbatch) +
                             ", whose saved values are not offloaded");
  Offloaded &out = entry->second;
  // Allocated in the stage functions' order, filled on the copy queue.
  for (auto &[name, copy] : out.host)
    out.back.emplace(name, tensorLike(copy.get(), compute.tensorAllocator(),
                                      "reload the saved values of " +
                                          microbatchName(stage, microbatch) +
                                          " to " + compute.device().name()));
  copiesAfterCompute();
  // The host copies are read once the copy is queued: they can go then
  // (Queue::copy).
  for (auto &[name, copy] : out.host)
    copies->copy(pp_tensor_data(out.back.at(name).get()),
                 pp_tensor_data(copy.get()), pp_tensor_nbytes(copy.get()));
  out.host.clear();
  out.copiedBack = compute.device().createEvent();
  copies->record(*out.copiedBack);
  held -= out.bytes;
  copied += out.bytes;
}

int64_t ActivationOffload::residentBytes() const {
  int64_t bytes = 0;
  for (const auto &[key, entry] : offloaded)
    if (entry.copiedBack)
      bytes += entry.bytes;
  for (const auto &[values, copiedOut] : copyingOut)
    for (const auto &[name, value] : values)
      bytes += static_cast<int64_t>(pp_tensor_nbytes(value.get()));
  return bytes;
}

void ActivationOffload::take(int64_t stage, int64_t microbatch,
                             SavedValues &values) {
  auto entry = offloaded.find({stage, microbatch});
  if (entry == offloaded.end())
    return;
  if (!entry->second.copiedBack)
    throw std::runtime_error("the backward of " +
                             microbatchName(stage, microbatch) +
                             " runs while its saved values are offloaded; "
                             "the schedule must reload them before it");
  compute.wait(*entry->second.copiedBack);
  for (auto &[name, value] : entry->second.back)
    values[name] = std::move(value);
  offloaded.erase(entry);
  freeCopiedOut();
}

} // namespace pp::runtime

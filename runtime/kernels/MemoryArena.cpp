//===- MemoryArena.cpp - a stage function's tensors at planned offsets ----===//

#include "runtime/kernels/MemoryArena.h"

#include "runtime/core/PlacedTensor.h"
#include "runtime/kernels/Frame.h"

#include <cstdlib>

namespace pp::runtime {

namespace {
constexpr size_t kAlignment = 64;
} // namespace

ArenaBuffer::~ArenaBuffer() { std::free(buffer); }

void *ArenaBuffer::data() {
  if (!buffer && bytes > 0)
    buffer = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) /
                                                kAlignment * kAlignment);
  return buffer;
}

MemoryArena::MemoryArena(std::string function, MemoryPlan plan,
                         std::shared_ptr<ArenaBuffer> buffer)
    : function(std::move(function)), memoryPlan(std::move(plan)),
      shared(std::move(buffer)),
      headers(memoryPlan.allocations.size(), nullptr) {}

MemoryArena::~MemoryArena() {
  for (pp_tensor *header : headers)
    if (header)
      destroyPlacedTensor(header);
}

void MemoryArena::begin() { next = 0; }

std::optional<pp_tensor *>
MemoryArena::place(pp_frame *frame, pp_dtype dtype,
                   const std::vector<int64_t> &shape) {
  std::optional<size_t> bytes = tensorBytes(dtype, shape);
  // Spelled out on failure only: the steady state allocates nothing.
  auto request = [&] {
    return (bytes ? std::to_string(*bytes) + " bytes" : "too many bytes") +
           std::string(" (") + pp_dtype_name(dtype) + ", shape " +
           formatShape(shape) + ")";
  };
  size_t index = next++;
  if (index >= memoryPlan.allocations.size()) {
    failFrame(frame, function + ": allocation " + std::to_string(index) +
                         " of " + request() +
                         " is past the end of its memory " +
                         "plan, which lists " +
                         std::to_string(memoryPlan.allocations.size()) +
                         "; the manifest and the stage library disagree: "
                         "recompile the model");
    return nullptr;
  }
  const PlannedAllocation &planned = memoryPlan.allocations[index];
  if (!bytes || *bytes != planned.bytes) {
    failFrame(frame, function + ": allocation " + std::to_string(index) +
                         " asks for " + request() +
                         ", but its memory plan has " +
                         std::to_string(planned.bytes) +
                         " bytes there; the manifest and the stage library "
                         "disagree: recompile the model");
    return nullptr;
  }
  if (planned.offset == PlannedAllocation::kOutlivesCall)
    return std::nullopt;
  void *buffer =
      shared->size() >= memoryPlan.arenaBytes ? shared->data() : nullptr;
  if (!buffer) {
    failFrame(frame, function + ": cannot allocate its arena of " +
                         std::to_string(memoryPlan.arenaBytes) + " bytes");
    return nullptr;
  }
  pp_tensor *&header = headers[index];
  if (!header)
    header = createPlacedTensor();
  if (!header) {
    failFrame(frame, function + ": cannot allocate a tensor header");
    return nullptr;
  }
  placeTensor(header, dtype, shape,
              static_cast<char *>(buffer) + planned.offset);
  return header;
}

std::string MemoryArena::finish() const {
  if (next == memoryPlan.allocations.size())
    return "";
  return function + " made " + std::to_string(next) +
         " allocations, but its memory plan lists " +
         std::to_string(memoryPlan.allocations.size()) +
         "; the manifest and the stage library disagree: recompile the model";
}

} // namespace pp::runtime

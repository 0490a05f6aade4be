//===- CollectivePlans.cpp - layouts and arithmetic of collectives --------===//

#include "runtime/kernels/CollectivePlans.h"

#include <string_view>

namespace pp::runtime {

CollectiveGroup *collectiveGroup(pp_frame *frame, const char *kernel,
                                 const char *axes) {
  std::string_view key = axes ? axes : "";
  if (frame->collectiveGroups.empty() && frame->collectives)
    return frame->collectives;
  if (auto found = frame->collectiveGroups.find(key);
      found != frame->collectiveGroups.end() && found->second)
    return found->second;
  std::string known;
  for (const auto &[name, group] : frame->collectiveGroups)
    known += (known.empty() ? "'" : ", '") + name + "'";
  failFrame(frame, std::string(kernel) +
                       ": the stage function runs a "
                       "collective over the mesh axes '" +
                       std::string(key) +
                       "', but the runtime gave its frame no group over "
                       "them (" +
                       (known.empty() ? std::string("none at all")
                                      : "it has groups over " + known) +
                       "); run the package with pp-run, which connects the "
                       "groups of the package's mesh axes");
  return nullptr;
}

StridedCopy ShardLayout::piece(int64_t rank) const {
  StridedCopy copy;
  copy.shape = {outer, blocks, run};
  copy.sourceStrides = {blocks * devices * run, devices * run, 1};
  copy.destStrides = {blocks * run, run, 1};
  copy.sourceOffset = rank * run;
  return copy;
}

StridedCopy ShardLayout::assemble() const {
  StridedCopy copy;
  copy.shape = {devices, outer, blocks, run};
  copy.sourceStrides = {outer * blocks * run, blocks * run, run, 1};
  copy.destStrides = {run, blocks * devices * run, devices * run, 1};
  return copy;
}

std::optional<ShardLayout> shardLayout(pp_frame *frame, const char *kernel,
                                       const Shape &global, int64_t dim,
                                       int64_t blocks, int64_t devices) {
  int64_t rank = static_cast<int64_t>(global.size());
  if (dim < 0 || dim >= rank || blocks < 1) {
    failFrame(frame, std::string(kernel) + ": dim " + std::to_string(dim) +
                         " with " + std::to_string(blocks) +
                         " block(s) does not name a dimension of " +
                         formatShape(global));
    return std::nullopt;
  }
  int64_t pieces = blocks * devices;
  if (global[dim] % pieces != 0) {
    failFrame(frame, std::string(kernel) + ": dimension " +
                         std::to_string(dim) + " of " + formatShape(global) +
                         " does not split into " + std::to_string(blocks) +
                         " block(s) x " + std::to_string(devices) +
                         " device(s)");
    return std::nullopt;
  }
  ShardLayout layout;
  layout.blocks = blocks;
  layout.devices = devices;
  layout.run = global[dim] / pieces;
  for (int64_t d = 0; d < dim; ++d)
    layout.outer *= global[d];
  for (int64_t d = dim + 1; d < rank; ++d)
    layout.run *= global[d];
  return layout;
}

std::optional<ShardCopy> shardSliceCopy(pp_frame *frame, pp_tensor *input,
                                        const char *axes, int64_t blocks,
                                        int64_t dim) {
  CollectiveGroup *group =
      input ? collectiveGroup(frame, "shard_slice", axes) : nullptr;
  if (!group)
    return std::nullopt;
  Shape whole = shapeOf(input);
  std::optional<ShardLayout> layout =
      shardLayout(frame, "shard_slice", whole, dim, blocks, group->size());
  if (!layout)
    return std::nullopt;
  return ShardCopy{layout->piece(group->rank()),
                   scaledShape(whole, dim, 1, group->size())};
}

bool checkReduceInput(pp_frame *frame, const char *kernel, pp_tensor *input,
                      int reduction) {
  if (!input)
    return false;
  if (!visitFloatType(pp_tensor_dtype(input), [](auto) {})) {
    failFrame(frame, std::string(kernel) +
                         " expects f32, bf16 or f16 tensors, got " +
                         pp_dtype_name(pp_tensor_dtype(input)));
    return false;
  }
  if (reduction >= 0 && reduction <= 2)
    return true;
  failFrame(frame, std::string(kernel) + ": reduction " +
                       std::to_string(reduction) +
                       " is not 0 (sum), 1 (max) or 2 (min)");
  return false;
}

Shape scaledShape(Shape shape, int64_t dim, int64_t grow, int64_t shrink) {
  if (dim >= 0 && dim < static_cast<int64_t>(shape.size()))
    shape[dim] = shape[dim] * grow / shrink;
  return shape;
}

} // namespace pp::runtime

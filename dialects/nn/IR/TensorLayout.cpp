//===- TensorLayout.cpp - how a tensor lies on a tensor axis --------------===//

#include "dialects/nn/IR/TensorLayout.h"

using namespace mlir;
using namespace pp::nn;

std::string TensorLayout::describe() const {
  switch (kind) {
  case Kind::Replicated:
    return "replicated";
  case Kind::Partial:
    return "partial";
  case Kind::Sharded:
    break;
  }
  std::string text = "sharded(dim " + std::to_string(dim);
  if (blocks != 1)
    text += ", " + std::to_string(blocks) + " blocks";
  return text + ")";
}

bool pp::nn::layoutFits(RankedTensorType type, TensorLayout layout,
                    int64_t devices) {
  if (!layout.isSharded())
    return true;
  if (layout.dim < 0 || layout.dim >= type.getRank() || layout.blocks < 1)
    return false;
  int64_t size = type.getDimSize(layout.dim);
  return !ShapedType::isDynamic(size) && size > 0 &&
         size % (layout.blocks * devices) == 0;
}

RankedTensorType pp::nn::localType(RankedTensorType type, TensorLayout layout,
                               int64_t devices) {
  if (!layout.isSharded())
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape[layout.dim] /= devices;
  return RankedTensorType::get(shape, type.getElementType());
}

/// The product of `shape[from..)`: the flat stride of dimension `from - 1`.
static int64_t strideAfter(ArrayRef<int64_t> shape, size_t from) {
  int64_t stride = 1;
  for (int64_t size : shape.drop_front(from))
    stride *= size;
  return stride;
}

std::optional<TensorLayout> pp::nn::reshapeLayout(ArrayRef<int64_t> from,
                                              ArrayRef<int64_t> to,
                                              TensorLayout layout,
                                              int64_t devices) {
  if (!layout.isSharded())
    return layout;
  // In the flat (row-major) index space, the device index is one factor of
  // size `devices` at stride `deviceStride`: the devices' pieces of a block
  // are its consecutive parts. A reshape keeps the flat index, so the
  // result is sharded where that factor lies inside one dimension.
  int64_t piece = from[layout.dim] / (layout.blocks * devices);
  int64_t deviceStride = piece * strideAfter(from, layout.dim + 1);
  for (size_t d = 0; d < to.size(); ++d) {
    int64_t stride = strideAfter(to, d + 1);
    int64_t extent = stride * to[d];
    if (stride <= deviceStride && deviceStride % stride == 0 &&
        deviceStride * devices <= extent &&
        extent % (deviceStride * devices) == 0)
      return TensorLayout::sharded(d, extent / (deviceStride * devices));
  }
  return std::nullopt;
}

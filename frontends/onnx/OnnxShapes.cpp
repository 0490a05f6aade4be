//===- OnnxShapes.cpp - The shape arithmetic of ONNX's ops ----------------===//

#include "frontends/onnx/OnnxShapes.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace pp::onnx_frontend {

int64_t elementCount(ArrayRef<int64_t> shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

/// "[2, 3]" for messages.
static std::string shapeText(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(size);
  return text + "]";
}

FailureOr<int64_t> normalizeAxis(const NodeContext &ctx, StringRef what,
                                 int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return ctx.error() << what << " " << axis << " is out of range for rank "
                       << rank;
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Shape> normalizeAxes(const NodeContext &ctx, ArrayRef<int64_t> axes,
                               int64_t rank) {
  Shape result;
  for (int64_t axis : axes) {
    FailureOr<int64_t> normalized = normalizeAxis(ctx, "axis", axis, rank);
    if (failed(normalized))
      return failure();
    if (llvm::is_contained(result, *normalized))
      return ctx.error() << "axes " << shapeText(axes) << " name dimension "
                         << *normalized << " twice";
    result.push_back(*normalized);
  }
  return result;
}

FailureOr<Shape> reshapeShape(const NodeContext &ctx, ArrayRef<int64_t> input,
                              ArrayRef<int64_t> requested, bool allowZero) {
  Shape shape;
  std::optional<int64_t> inferred;
  for (auto [i, size] : llvm::enumerate(requested)) {
    if (size == -1) {
      if (inferred)
        return ctx.error() << "shape " << shapeText(requested)
                           << " has more than one -1";
      inferred = i;
      shape.push_back(1);
    } else if (size == 0 && !allowZero) {
      if (i >= input.size())
        return ctx.error() << "shape " << shapeText(requested)
                           << " copies (0) dimension " << i
                           << " that the input " << shapeText(input)
                           << " lacks";
      shape.push_back(input[i]);
    } else if (size < 0) {
      return ctx.error() << "shape " << shapeText(requested)
                         << " has the negative size " << size;
    } else {
      shape.push_back(size);
    }
  }
  int64_t total = elementCount(input);
  int64_t known = elementCount(shape);
  if (inferred) {
    if (known == 0 || total % known != 0)
      return ctx.error() << "shape " << shapeText(requested)
                         << " cannot hold the " << total
                         << " elements of the input " << shapeText(input);
    shape[*inferred] = total / known;
  } else if (known != total) {
    return ctx.error() << "shape " << shapeText(requested) << " holds " << known
                       << " elements but the input " << shapeText(input)
                       << " has " << total;
  }
  return shape;
}

FailureOr<Shape> unsqueezeShape(const NodeContext &ctx, ArrayRef<int64_t> input,
                                ArrayRef<int64_t> axes) {
  int64_t rank = input.size() + axes.size();
  FailureOr<Shape> normalized = normalizeAxes(ctx, axes, rank);
  if (failed(normalized))
    return failure();
  Shape shape;
  const int64_t *next = input.begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*normalized, d) ? 1 : *next++);
  return shape;
}

FailureOr<Shape> squeezeShape(const NodeContext &ctx, ArrayRef<int64_t> input,
                              std::optional<ArrayRef<int64_t>> axes) {
  Shape removed;
  if (axes) {
    FailureOr<Shape> normalized = normalizeAxes(ctx, *axes, input.size());
    if (failed(normalized))
      return failure();
    removed = *normalized;
    for (int64_t d : removed)
      if (input[d] != 1)
        return ctx.error() << "cannot squeeze dimension " << d << " of shape "
                           << shapeText(input) << ": its size is " << input[d]
                           << ", not 1";
  } else {
    for (auto [d, size] : llvm::enumerate(input))
      if (size == 1)
        removed.push_back(d);
  }
  Shape shape;
  for (auto [d, size] : llvm::enumerate(input))
    if (!llvm::is_contained(removed, static_cast<int64_t>(d)))
      shape.push_back(size);
  return shape;
}

FailureOr<Shape> flattenShape(const NodeContext &ctx, ArrayRef<int64_t> input,
                              int64_t axis) {
  int64_t rank = input.size();
  if (axis < -rank || axis > rank)
    return ctx.error() << "axis " << axis << " is out of range for rank "
                       << rank << " (Flatten takes -rank to rank)";
  if (axis < 0)
    axis += rank;
  return Shape{elementCount(input.take_front(axis)),
               elementCount(input.drop_front(axis))};
}

FailureOr<Shape> expandShape(const NodeContext &ctx, ArrayRef<int64_t> input,
                             ArrayRef<int64_t> requested) {
  size_t rank = std::max(input.size(), requested.size());
  Shape shape(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < input.size() ? input[input.size() - 1 - i] : 1;
    int64_t b = i < requested.size() ? requested[requested.size() - 1 - i] : 1;
    if (a != b && a != 1 && b != 1)
      return ctx.error() << "cannot expand shape " << shapeText(input) << " to "
                         << shapeText(requested) << ": sizes " << a << " and "
                         << b << " do not broadcast";
    shape[rank - 1 - i] = a == 1 ? b : a;
  }
  return shape;
}

FailureOr<Shape> transposePermutation(const NodeContext &ctx, int64_t rank) {
  Shape perm;
  if (const onnx::AttributeProto *given = findAttribute(ctx.node, "perm"))
    perm.assign(given->ints().begin(), given->ints().end());
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  Shape sorted(perm);
  llvm::sort(sorted);
  bool isPermutation = static_cast<int64_t>(sorted.size()) == rank;
  for (int64_t d = 0; isPermutation && d < rank; ++d)
    isPermutation = sorted[d] == d;
  if (!isPermutation)
    return ctx.error() << "perm " << shapeText(perm)
                       << " is not a permutation of the " << rank
                       << " dimensions";
  return perm;
}

Shape SliceBounds::resultShape() const {
  Shape shape;
  for (auto [start, limit, stride] : llvm::zip_equal(starts, limits, strides))
    shape.push_back((limit - start + stride - 1) / stride);
  return shape;
}

FailureOr<SliceBounds> sliceBounds(const NodeContext &ctx,
                                   ArrayRef<int64_t> input,
                                   ArrayRef<int64_t> starts,
                                   ArrayRef<int64_t> ends,
                                   std::optional<ArrayRef<int64_t>> axes,
                                   std::optional<ArrayRef<int64_t>> steps) {
  int64_t rank = input.size();
  size_t count = starts.size();
  if (ends.size() != count || (axes && axes->size() != count) ||
      (steps && steps->size() != count))
    return ctx.error() << "starts, ends, axes and steps differ in length ("
                       << count << ", " << ends.size() << ", "
                       << (axes ? axes->size() : count) << ", "
                       << (steps ? steps->size() : count) << ")";
  Shape sliced;
  if (axes) {
    FailureOr<Shape> normalized = normalizeAxes(ctx, *axes, rank);
    if (failed(normalized))
      return failure();
    sliced = *normalized;
  } else {
    if (static_cast<int64_t>(count) > rank)
      return ctx.error() << count << " starts for rank " << rank;
    for (size_t i = 0; i < count; ++i)
      sliced.push_back(i);
  }
  SliceBounds bounds{Shape(rank, 0), Shape(input), Shape(rank, 1)};
  for (size_t i = 0; i < count; ++i) {
    int64_t d = sliced[i];
    int64_t step = steps ? (*steps)[i] : 1;
    if (step < 1)
      return ctx.error() << "step " << step << " of axis " << d
                         << ": pp slices with steps of 1 or more";
    int64_t size = input[d];
    auto clamp = [&](int64_t index) {
      if (index < 0)
        index = index < -size ? 0 : index + size;
      return std::min(index, size);
    };
    int64_t start = clamp(starts[i]);
    bounds.starts[d] = start;
    bounds.limits[d] = std::max(start, clamp(ends[i]));
    bounds.strides[d] = step;
  }
  return bounds;
}

FailureOr<Shape> splitSizes(const NodeContext &ctx, ArrayRef<int64_t> input,
                            int64_t dim, std::optional<ArrayRef<int64_t>> given,
                            int64_t outputs) {
  int64_t size = input[dim];
  if (given) {
    if (static_cast<int64_t>(given->size()) != outputs)
      return ctx.error() << "gives " << given->size() << " sizes for "
                         << outputs << " outputs";
    if (llvm::any_of(*given, [](int64_t s) { return s < 0; }) ||
        std::accumulate(given->begin(), given->end(), int64_t{0}) != size)
      return ctx.error() << "sizes " << shapeText(*given)
                         << " do not add up to dimension " << dim
                         << " of shape " << shapeText(input) << " (" << size
                         << ")";
    return Shape(*given);
  }
  if (findAttribute(ctx.node, "num_outputs")) {
    // Opset 18: parts of ceil(size / outputs), the last one smaller.
    int64_t part = (size + outputs - 1) / outputs;
    int64_t last = size - part * (outputs - 1);
    if (last <= 0)
      return ctx.error() << "cannot cut dimension " << dim << " (size " << size
                         << ") into " << outputs << " parts of " << part;
    Shape sizes(outputs - 1, part);
    sizes.push_back(last);
    return sizes;
  }
  if (size % outputs != 0)
    return ctx.error() << "cannot cut dimension " << dim << " (size " << size
                       << ") into " << outputs
                       << " equal parts; give the sizes as its second input";
  return Shape(outputs, size / outputs);
}

} // namespace pp::onnx_frontend

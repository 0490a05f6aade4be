//===- ConstantFolding.cpp - Evaluating ONNX nodes at import --------------===//
//
// Exporters compute shapes in the graph: Shape, Gather, Unsqueeze, Concat
// and Reshape chains, position ids from Range, causal masks from Trilu,
// Equal and Where over constants. pp compiles static shapes, so such nodes
// are evaluated here, when their inputs are constants (Constant nodes,
// integer initializers, earlier folded nodes; Shape and Size only need
// their input's static type), and become constants themselves.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxShapes.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;

namespace pp::onnx_frontend {
namespace {

/// A constant tensor being folded: floats in double, integers and bools in
/// int64_t.
struct Literal {
  Shape shape;
  Type elementType;
  std::vector<double> floats;
  std::vector<int64_t> ints;

  bool isFloat() const { return isa<FloatType>(elementType); }
  int64_t count() const { return elementCount(shape); }

  static Literal fromAttr(DenseElementsAttr attr);
  /// An empty literal of `shape` and `elementType` to fill.
  static Literal like(ArrayRef<int64_t> shape, Type elementType);
  DenseElementsAttr toAttr() const;
  /// Appends element `index` of `from` (which has this element type).
  void append(const Literal &from, int64_t index) {
    if (isFloat())
      floats.push_back(from.floats[index]);
    else
      ints.push_back(from.ints[index]);
  }
};

Literal Literal::like(ArrayRef<int64_t> shape, Type elementType) {
  Literal literal{Shape(shape), elementType, {}, {}};
  (literal.isFloat() ? literal.floats.reserve(literal.count())
                     : literal.ints.reserve(literal.count()));
  return literal;
}

Literal Literal::fromAttr(DenseElementsAttr attr) {
  auto type = cast<RankedTensorType>(attr.getType());
  Literal literal = like(type.getShape(), type.getElementType());
  if (literal.isFloat()) {
    for (APFloat value : attr.getValues<APFloat>()) {
      bool lost;
      value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      literal.floats.push_back(value.convertToDouble());
    }
  } else {
    bool isBool = literal.elementType.isInteger(1);
    for (const APInt &value : attr.getValues<APInt>())
      literal.ints.push_back(isBool ? value.getZExtValue()
                                    : value.getSExtValue());
  }
  return literal;
}

DenseElementsAttr Literal::toAttr() const {
  auto type = RankedTensorType::get(shape, elementType);
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    SmallVector<APFloat> values;
    for (double value : floats) {
      APFloat converted(value);
      bool lost;
      converted.convert(floatType.getFloatSemantics(),
                        APFloat::rmNearestTiesToEven, &lost);
      values.push_back(converted);
    }
    return DenseElementsAttr::get(type, values);
  }
  if (elementType.isInteger(1)) {
    SmallVector<bool> values(ints.begin(), ints.end());
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  unsigned width = elementType.getIntOrFloatBitWidth();
  SmallVector<APInt> values;
  for (int64_t value : ints)
    values.push_back(APInt(width, value, /*isSigned=*/true,
                           /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, values);
}

/// The row-major strides of `shape`.
Shape stridesOf(ArrayRef<int64_t> shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Calls `visit` with every index of `shape`, in row-major order.
void forEachIndex(ArrayRef<int64_t> shape,
                  function_ref<void(ArrayRef<int64_t>)> visit) {
  Shape index(shape.size(), 0);
  for (int64_t n = 0, count = elementCount(shape); n < count; ++n) {
    visit(index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// A literal of `shape` whose element at each index is element
/// `source(index)` of `from`, or zero where `source` returns -1.
Literal gatherElements(const Literal &from, ArrayRef<int64_t> shape,
                       function_ref<int64_t(ArrayRef<int64_t>)> source) {
  Literal result = Literal::like(shape, from.elementType);
  forEachIndex(shape, [&](ArrayRef<int64_t> index) {
    int64_t at = source(index);
    if (at >= 0)
      result.append(from, at);
    else if (result.isFloat())
      result.floats.push_back(0.0);
    else
      result.ints.push_back(0);
  });
  return result;
}

/// The flat index in a tensor of `shape` (broadcast to the result) of the
/// result index `index`.
int64_t broadcastIndex(ArrayRef<int64_t> index, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> strides) {
  int64_t offset = index.size() - shape.size(), flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      flat += index[offset + d] * strides[d];
  return flat;
}

/// Integer arithmetic that wraps like two's complement instead of
/// overflowing.
int64_t wrap(uint64_t value) { return static_cast<int64_t>(value); }

/// Evaluates one foldable node.
class Folder {
public:
  Folder(const NodeContext &ctx, ValueRange inputs,
         ArrayRef<std::optional<Literal>> literals)
      : ctx(ctx), inputs(inputs), literals(literals) {}

  /// The outputs; nullopt when the node does not fold.
  FailureOr<std::optional<SmallVector<Literal>>> fold();

private:
  using Result = FailureOr<std::optional<SmallVector<Literal>>>;
  static Result one(Literal literal) {
    return std::optional<SmallVector<Literal>>(
        SmallVector<Literal>{std::move(literal)});
  }
  static Result one(FailureOr<Literal> literal) {
    if (failed(literal))
      return failure();
    return one(std::move(*literal));
  }
  /// Whether every input given (optional ones may be left out) is constant.
  bool allConstant() const {
    return llvm::all_of(llvm::zip(inputs, literals), [](const auto &pair) {
      return !std::get<0>(pair) || std::get<1>(pair).has_value();
    });
  }
  const Literal &in(int i) const { return *literals[i]; }
  /// Input `i` as integers, or nullopt when absent.
  std::optional<ArrayRef<int64_t>> optionalInts(int i) const {
    if (i >= static_cast<int>(literals.size()) || !literals[i])
      return std::nullopt;
    return ArrayRef<int64_t>(literals[i]->ints);
  }
  /// `data` with `shape` (same elements).
  static Literal reshapedTo(Literal data, ArrayRef<int64_t> shape) {
    data.shape = Shape(shape);
    return data;
  }
  /// Checks that a folded tensor of `shape` stays small enough to hold at
  /// import.
  LogicalResult fits(ArrayRef<int64_t> shape);
  FailureOr<Literal> shape();
  FailureOr<Literal> size();
  FailureOr<Literal> gather();
  /// The node's `axis` of `data` (attribute, default 0), normalized, once
  /// every index of `indices` is checked to lie on it.
  FailureOr<int64_t> indexedAxis(const Literal &data, const Literal &indices);
  FailureOr<Literal> concat();
  FailureOr<Literal> slice();
  FailureOr<Literal> expand();
  FailureOr<Literal> transpose();
  FailureOr<Literal> trilu();
  FailureOr<Literal> constantOfShape();
  FailureOr<Literal> range();
  FailureOr<Literal> castTo(const Literal &from, Type to);
  FailureOr<Literal> where();
  /// Elementwise `lhs op rhs` with broadcasting; `intOp` and `floatOp`
  /// compute one element; the result has `resultType` (null: lhs's).
  FailureOr<Literal>
  binary(const Literal &lhs, const Literal &rhs,
         function_ref<FailureOr<int64_t>(int64_t, int64_t)> intOp,
         function_ref<double(double, double)> floatOp,
         Type resultType = nullptr);
  FailureOr<Literal> arithmetic(StringRef op, const Literal &lhs,
                                const Literal &rhs);
  FailureOr<Literal> unary(StringRef op, const Literal &input);
  FailureOr<Literal> logical(StringRef op);
  FailureOr<Literal> cumSum();
  FailureOr<Literal> gatherAlongAxis();
  FailureOr<Literal> gatherND();

  const NodeContext &ctx;
  ValueRange inputs;
  ArrayRef<std::optional<Literal>> literals;
};

/// The most elements a folded tensor may have (a causal mask of 4096 x 4096
/// has 2^24).
constexpr int64_t kMaxFoldedElements = int64_t{1} << 26;

LogicalResult Folder::fits(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    if (size < 0 || __builtin_mul_overflow(count, size, &count) ||
        count > kMaxFoldedElements)
      return ctx.error() << "folding it at import would make a tensor of more "
                            "than "
                         << kMaxFoldedElements << " elements";
  return success();
}

FailureOr<Literal> Folder::shape() {
  auto type = cast<RankedTensorType>(inputs[0].getType());
  int64_t rank = type.getRank();
  // Opset 15's start and end: clamped, negative ones count from the back.
  auto clamp = [&](int64_t index) {
    if (index < 0)
      index += rank;
    return std::clamp<int64_t>(index, 0, rank);
  };
  int64_t start = clamp(intAttribute(ctx.node, "start", 0));
  int64_t end = clamp(intAttribute(ctx.node, "end", rank));
  Literal result = Literal::like({std::max<int64_t>(end - start, 0)},
                                 IntegerType::get(type.getContext(), 64));
  for (int64_t d = start; d < end; ++d)
    result.ints.push_back(type.getDimSize(d));
  return result;
}

FailureOr<Literal> Folder::size() {
  auto type = cast<RankedTensorType>(inputs[0].getType());
  Literal result = Literal::like({}, IntegerType::get(type.getContext(), 64));
  result.ints.push_back(type.getNumElements());
  return result;
}

FailureOr<int64_t> Folder::indexedAxis(const Literal &data,
                                        const Literal &indices) {
  FailureOr<int64_t> axis = normalizeAxis(
      ctx, "axis", intAttribute(ctx.node, "axis", 0), data.shape.size());
  if (failed(axis))
    return failure();
  int64_t size = data.shape[*axis];
  for (int64_t index : indices.ints)
    if (index < -size || index >= size)
      return ctx.error() << "index " << index << " is out of range for axis "
                         << *axis << " of size " << size;
  return axis;
}

FailureOr<Literal> Folder::gather() {
  const Literal &data = in(0), &indices = in(1);
  if (!indices.elementType.isInteger(64) && !indices.elementType.isInteger(32))
    return ctx.error() << "indices '" << ctx.inputName(1)
                       << "' must be INT64 or INT32";
  int64_t rank = data.shape.size();
  FailureOr<int64_t> axis = indexedAxis(data, indices);
  if (failed(axis))
    return failure();
  int64_t size = data.shape[*axis];
  Shape shape(data.shape.begin(), data.shape.begin() + *axis);
  llvm::append_range(shape, indices.shape);
  shape.append(data.shape.begin() + *axis + 1, data.shape.end());
  Shape strides = stridesOf(data.shape),
        indexStrides = stridesOf(indices.shape);
  int64_t indexRank = indices.shape.size();
  return gatherElements(data, shape, [&](ArrayRef<int64_t> at) {
    int64_t flat = 0;
    for (int64_t d = 0; d < *axis; ++d)
      flat += at[d] * strides[d];
    int64_t which = 0;
    for (int64_t d = 0; d < indexRank; ++d)
      which += at[*axis + d] * indexStrides[d];
    int64_t index = indices.ints[which];
    flat += (index < 0 ? index + size : index) * strides[*axis];
    for (int64_t d = *axis + 1; d < rank; ++d)
      flat += at[d + indexRank - 1] * strides[d];
    return flat;
  });
}

FailureOr<Literal> Folder::concat() {
  const Literal &first = in(0);
  int64_t rank = first.shape.size();
  FailureOr<int64_t> axis =
      normalizeAxis(ctx, "axis", intAttribute(ctx.node, "axis", 0), rank);
  if (failed(axis))
    return failure();
  Shape shape = first.shape;
  shape[*axis] = 0;
  for (const std::optional<Literal> &part : literals) {
    Shape other = part->shape;
    if (static_cast<int64_t>(other.size()) != rank ||
        part->elementType != first.elementType)
      return ctx.error() << "inputs differ in rank or element type";
    shape[*axis] += other[*axis];
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && other[d] != first.shape[d])
        return ctx.error() << "inputs differ in dimension " << d;
  }
  Literal result = Literal::like(shape, first.elementType);
  int64_t outer = elementCount(ArrayRef<int64_t>(shape).take_front(*axis));
  int64_t inner = elementCount(ArrayRef<int64_t>(shape).drop_front(*axis + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (const std::optional<Literal> &part : literals) {
      int64_t chunk = part->shape[*axis] * inner;
      for (int64_t i = 0; i < chunk; ++i)
        result.append(*part, o * chunk + i);
    }
  return result;
}

FailureOr<Literal> Folder::slice() {
  const Literal &data = in(0);
  FailureOr<SliceBounds> bounds =
      sliceBounds(ctx, data.shape, in(1).ints, in(2).ints, optionalInts(3),
                  optionalInts(4));
  if (failed(bounds))
    return failure();
  Shape strides = stridesOf(data.shape);
  return gatherElements(data, bounds->resultShape(), [&](ArrayRef<int64_t> at) {
    int64_t flat = 0;
    for (size_t d = 0; d < at.size(); ++d)
      flat += (bounds->starts[d] + at[d] * bounds->strides[d]) * strides[d];
    return flat;
  });
}

FailureOr<Literal> Folder::expand() {
  const Literal &data = in(0);
  FailureOr<Shape> shape = expandShape(ctx, data.shape, in(1).ints);
  if (failed(shape) || failed(fits(*shape)))
    return failure();
  Shape strides = stridesOf(data.shape);
  return gatherElements(data, *shape, [&](ArrayRef<int64_t> at) {
    return broadcastIndex(at, data.shape, strides);
  });
}

FailureOr<Literal> Folder::transpose() {
  const Literal &data = in(0);
  FailureOr<Shape> perm = transposePermutation(ctx, data.shape.size());
  if (failed(perm))
    return failure();
  Shape shape, strides = stridesOf(data.shape);
  for (int64_t d : *perm)
    shape.push_back(data.shape[d]);
  return gatherElements(data, shape, [&](ArrayRef<int64_t> at) {
    int64_t flat = 0;
    for (auto [i, d] : llvm::enumerate(*perm))
      flat += at[i] * strides[d];
    return flat;
  });
}

FailureOr<Literal> Folder::trilu() {
  const Literal &data = in(0);
  int64_t rank = data.shape.size();
  if (rank < 2)
    return ctx.error() << "input has rank " << rank
                       << "; Trilu needs 2 or more";
  std::optional<ArrayRef<int64_t>> k = optionalInts(1);
  if (k && k->size() != 1)
    return ctx.error() << "k must hold one value, found " << k->size();
  int64_t diagonal = k ? k->front() : 0;
  bool upper = intAttribute(ctx.node, "upper", 1) != 0;
  Shape strides = stridesOf(data.shape);
  return gatherElements(data, data.shape, [&](ArrayRef<int64_t> at) {
    int64_t offset = at[rank - 1] - at[rank - 2];
    bool keep = upper ? offset >= diagonal : offset <= diagonal;
    return keep ? broadcastIndex(at, data.shape, strides) : int64_t{-1};
  });
}

FailureOr<Literal> Folder::constantOfShape() {
  const Literal &shape = in(0);
  if (llvm::any_of(shape.ints, [](int64_t size) { return size < 0; }))
    return ctx.error() << "the shape has a negative size";
  if (failed(fits(shape.ints)))
    return failure();
  Literal value = Literal::like({1}, Float32Type::get(ctx.loc.getContext()));
  value.floats.push_back(0.0);
  if (const onnx::AttributeProto *given = findAttribute(ctx.node, "value")) {
    Builder builder(ctx.loc.getContext());
    FailureOr<TensorValues> read =
        readTensor(given->t(), ctx.describe("its value"), ctx.loc, builder);
    if (failed(read))
      return failure();
    if (read->type.getNumElements() != 1)
      return ctx.error() << "value must hold one element, found "
                         << read->type.getNumElements();
    value = Literal::fromAttr(toElementsAttr(*read));
  }
  return gatherElements(value, shape.ints,
                        [](ArrayRef<int64_t>) { return int64_t{0}; });
}

FailureOr<Literal> Folder::range() {
  for (int i = 0; i < 3; ++i)
    if (in(i).count() != 1)
      return ctx.error() << "input " << i << " ('" << ctx.inputName(i)
                         << "') must be a scalar";
  const Literal &start = in(0);
  if (in(1).elementType != start.elementType ||
      in(2).elementType != start.elementType)
    return ctx.error() << "start, limit and delta differ in element type";
  Literal result = Literal::like({0}, start.elementType);
  if (start.isFloat()) {
    double first = start.floats[0], limit = in(1).floats[0],
           delta = in(2).floats[0];
    if (delta == 0 || !std::isfinite(first + limit + delta))
      return ctx.error() << "delta is zero or a bound is not finite";
    int64_t count = std::clamp<double>(std::ceil((limit - first) / delta), 0,
                                       kMaxFoldedElements + 1);
    if (failed(fits({count})))
      return failure();
    for (int64_t i = 0; i < count; ++i)
      result.floats.push_back(first + i * delta);
    result.shape = {count};
    return result;
  }
  int64_t first = start.ints[0], limit = in(1).ints[0], delta = in(2).ints[0];
  if (delta == 0)
    return ctx.error() << "delta is zero";
  double span = (static_cast<double>(limit) - first) / delta;
  int64_t count =
      std::clamp<double>(std::ceil(span), 0, kMaxFoldedElements + 1);
  if (failed(fits({count})))
    return failure();
  for (int64_t i = 0; i < count; ++i)
    result.ints.push_back(first + i * delta);
  result.shape = {count};
  return result;
}

FailureOr<Literal> Folder::castTo(const Literal &from, Type to) {
  Literal result = Literal::like(from.shape, to);
  bool toBool = to.isInteger(1);
  if (from.isFloat() && result.isFloat()) {
    result.floats = from.floats;
  } else if (from.isFloat()) {
    for (double value : from.floats) {
      if (toBool) {
        result.ints.push_back(value != 0.0);
        continue;
      }
      double truncated = std::trunc(value);
      unsigned width = to.getIntOrFloatBitWidth();
      double bound = std::ldexp(1.0, width - 1);
      if (!(truncated >= -bound && truncated < bound))
        return ctx.error() << "cannot cast " << value << " to " << to
                           << ": it is out of range";
      result.ints.push_back(static_cast<int64_t>(truncated));
    }
  } else if (result.isFloat()) {
    for (int64_t value : from.ints)
      result.floats.push_back(static_cast<double>(value));
  } else {
    unsigned width = to.getIntOrFloatBitWidth();
    for (int64_t value : from.ints)
      result.ints.push_back(
          toBool ? value != 0
                 : APInt(64, value, true).trunc(width).getSExtValue());
  }
  return result;
}

FailureOr<Literal>
Folder::binary(const Literal &lhs, const Literal &rhs,
               function_ref<FailureOr<int64_t>(int64_t, int64_t)> intOp,
               function_ref<double(double, double)> floatOp, Type resultType) {
  if (lhs.elementType != rhs.elementType)
    return ctx.error() << "inputs differ in element type (" << lhs.elementType
                       << " and " << rhs.elementType << ")";
  FailureOr<Shape> shape = expandShape(ctx, lhs.shape, rhs.shape);
  if (failed(shape) || failed(fits(*shape)))
    return failure();
  Literal result =
      Literal::like(*shape, resultType ? resultType : lhs.elementType);
  Shape lhsStrides = stridesOf(lhs.shape), rhsStrides = stridesOf(rhs.shape);
  LogicalResult status = success();
  forEachIndex(*shape, [&](ArrayRef<int64_t> at) {
    int64_t l = broadcastIndex(at, lhs.shape, lhsStrides);
    int64_t r = broadcastIndex(at, rhs.shape, rhsStrides);
    if (failed(status))
      return;
    if (lhs.isFloat()) {
      double value = floatOp(lhs.floats[l], rhs.floats[r]);
      if (result.isFloat())
        result.floats.push_back(value);
      else
        result.ints.push_back(value != 0.0);
    } else {
      FailureOr<int64_t> value = intOp(lhs.ints[l], rhs.ints[r]);
      if (failed(value))
        status = failure();
      else
        result.ints.push_back(*value);
    }
  });
  if (failed(status))
    return failure();
  return result;
}

FailureOr<Literal> Folder::arithmetic(StringRef op, const Literal &lhs,
                                      const Literal &rhs) {
  auto ints = [&](auto f) {
    return [f](int64_t a, int64_t b) -> FailureOr<int64_t> { return f(a, b); };
  };
  if (op == "Add")
    return binary(lhs, rhs, ints([](int64_t a, int64_t b) {
                    return wrap(uint64_t(a) + uint64_t(b));
                  }),
                  [](double a, double b) { return a + b; });
  if (op == "Sub")
    return binary(lhs, rhs, ints([](int64_t a, int64_t b) {
                    return wrap(uint64_t(a) - uint64_t(b));
                  }),
                  [](double a, double b) { return a - b; });
  if (op == "Mul")
    return binary(lhs, rhs, ints([](int64_t a, int64_t b) {
                    return wrap(uint64_t(a) * uint64_t(b));
                  }),
                  [](double a, double b) { return a * b; });
  if (op == "Div")
    return binary(
        lhs, rhs,
        [&](int64_t a, int64_t b) -> FailureOr<int64_t> {
          if (b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min()))
            return ctx.error() << "integer division of " << a << " by " << b;
          return a / b; // Truncates toward zero, as ONNX runtimes do.
        },
        [](double a, double b) { return a / b; });
  if (op == "Pow")
    return binary(
        lhs, rhs,
        [&](int64_t a, int64_t b) -> FailureOr<int64_t> {
          double power = std::pow(double(a), double(b));
          if (!(std::fabs(power) < 0x1p63))
            return ctx.error() << a << " to the power " << b
                               << " is out of the integers' range";
          return static_cast<int64_t>(power);
        },
        [](double a, double b) { return std::pow(a, b); });
  if (op == "Max")
    return binary(
        lhs, rhs, ints([](int64_t a, int64_t b) { return std::max(a, b); }),
        [](double a, double b) {
          return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
        });
  if (op == "Min")
    return binary(
        lhs, rhs, ints([](int64_t a, int64_t b) { return std::min(a, b); }),
        [](double a, double b) {
          return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
        });
  auto comparison = [&](auto compare) {
    return binary(
        lhs, rhs,
        ints([compare](int64_t a, int64_t b) { return int64_t{compare(a, b)}; }),
        [compare](double a, double b) { return double(compare(a, b)); },
        IntegerType::get(ctx.loc.getContext(), 1));
  };
  if (op == "Less")
    return comparison(std::less<>());
  if (op == "LessOrEqual")
    return comparison(std::less_equal<>());
  if (op == "Greater")
    return comparison(std::greater<>());
  if (op == "GreaterOrEqual")
    return comparison(std::greater_equal<>());
  assert(op == "Equal" && "not a binary op the folder knows");
  return comparison(std::equal_to<>());
}

FailureOr<Literal> Folder::logical(StringRef op) {
  for (int i = 0, e = literals.size(); i < e; ++i)
    if (!in(i).elementType.isInteger(1))
      return ctx.error() << "input " << i << " ('" << ctx.inputName(i)
                         << "') must be BOOL, found " << in(i).elementType;
  if (op == "Not") {
    Literal result = in(0);
    for (int64_t &value : result.ints)
      value = !value;
    return result;
  }
  auto combine = [&](auto f) {
    return binary(
        in(0), in(1),
        [f](int64_t a, int64_t b) -> FailureOr<int64_t> {
          return int64_t{f(a != 0, b != 0)};
        },
        [](double, double) { return 0.0; });
  };
  if (op == "And")
    return combine([](bool a, bool b) { return a && b; });
  assert(op == "Or" && "not a logical op the folder knows");
  return combine([](bool a, bool b) { return a || b; });
}

FailureOr<Literal> Folder::cumSum() {
  const Literal &data = in(0);
  if (in(1).count() != 1 || in(1).isFloat())
    return ctx.error() << "axis ('" << ctx.inputName(1)
                       << "') must be one integer";
  int64_t rank = data.shape.size();
  FailureOr<int64_t> axis = normalizeAxis(ctx, "axis", in(1).ints[0], rank);
  if (failed(axis))
    return failure();
  bool exclusive = intAttribute(ctx.node, "exclusive", 0) != 0;
  bool reverse = intAttribute(ctx.node, "reverse", 0) != 0;
  Literal result = data;
  int64_t size = data.shape[*axis];
  int64_t inner = elementCount(ArrayRef<int64_t>(data.shape).drop_front(*axis + 1));
  int64_t outer = data.count() / std::max<int64_t>(size * inner, 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double floatSum = 0;
      uint64_t intSum = 0;
      for (int64_t step = 0; step < size; ++step) {
        int64_t k = reverse ? size - 1 - step : step;
        int64_t at = (o * size + k) * inner + i;
        if (data.isFloat()) {
          double value = data.floats[at];
          result.floats[at] = exclusive ? floatSum : floatSum + value;
          floatSum += value;
        } else {
          uint64_t value = data.ints[at];
          result.ints[at] = wrap(exclusive ? intSum : intSum + value);
          intSum += value;
        }
      }
    }
  return result;
}

FailureOr<Literal> Folder::gatherAlongAxis() {
  const Literal &data = in(0), &indices = in(1);
  int64_t rank = data.shape.size();
  if (static_cast<int64_t>(indices.shape.size()) != rank || indices.isFloat())
    return ctx.error() << "indices '" << ctx.inputName(1)
                       << "' must be integers of the data's rank " << rank;
  FailureOr<int64_t> axis = indexedAxis(data, indices);
  if (failed(axis))
    return failure();
  int64_t size = data.shape[*axis];
  Shape strides = stridesOf(data.shape), indexStrides = stridesOf(indices.shape);
  return gatherElements(data, indices.shape, [&](ArrayRef<int64_t> at) {
    int64_t flat = 0, which = 0;
    for (int64_t d = 0; d < rank; ++d)
      which += at[d] * indexStrides[d];
    for (int64_t d = 0; d < rank; ++d) {
      int64_t index = at[d];
      if (d == *axis) {
        index = indices.ints[which];
        index = index < 0 ? index + size : index;
      }
      flat += index * strides[d];
    }
    return flat;
  });
}

FailureOr<Literal> Folder::gatherND() {
  const Literal &data = in(0), &indices = in(1);
  int64_t rank = data.shape.size(), indexRank = indices.shape.size();
  int64_t batchDims = intAttribute(ctx.node, "batch_dims", 0);
  if (indices.isFloat() || indexRank < 1)
    return ctx.error() << "indices '" << ctx.inputName(1)
                       << "' must be integers of rank 1 or more";
  int64_t depth = indices.shape.back();
  if (batchDims < 0 || batchDims >= std::min(rank, indexRank) ||
      batchDims + depth > rank)
    return ctx.error() << "batch_dims " << batchDims << " and index depth "
                       << depth << " do not fit data of rank " << rank
                       << " and indices of rank " << indexRank;
  for (int64_t d = 0; d < batchDims; ++d)
    if (data.shape[d] != indices.shape[d])
      return ctx.error() << "data and indices differ in batch dimension " << d;
  Shape shape(indices.shape.begin(), indices.shape.end() - 1);
  shape.append(data.shape.begin() + batchDims + depth, data.shape.end());
  if (failed(fits(shape)))
    return failure();
  for (int64_t n = 0, e = indices.count(); n < e; ++n) {
    int64_t size = data.shape[batchDims + n % depth];
    if (indices.ints[n] < -size || indices.ints[n] >= size)
      return ctx.error() << "index " << indices.ints[n]
                         << " is out of range for a dimension of size " << size;
  }
  Shape strides = stridesOf(data.shape), indexStrides = stridesOf(indices.shape);
  int64_t prefix = indexRank - 1;
  return gatherElements(data, shape, [&](ArrayRef<int64_t> at) {
    int64_t flat = 0, tuple = 0;
    for (int64_t d = 0; d < prefix; ++d)
      tuple += at[d] * indexStrides[d];
    for (int64_t d = 0; d < batchDims; ++d)
      flat += at[d] * strides[d];
    for (int64_t k = 0; k < depth; ++k) {
      int64_t size = data.shape[batchDims + k];
      int64_t index = indices.ints[tuple + k];
      flat += (index < 0 ? index + size : index) * strides[batchDims + k];
    }
    for (int64_t d = batchDims + depth; d < rank; ++d)
      flat += at[prefix + d - batchDims - depth] * strides[d];
    return flat;
  });
}

FailureOr<Literal> Folder::where() {
  const Literal &condition = in(0), &onTrue = in(1), &onFalse = in(2);
  if (!condition.elementType.isInteger(1))
    return ctx.error() << "condition must be BOOL";
  if (onTrue.elementType != onFalse.elementType)
    return ctx.error() << "values differ in element type";
  FailureOr<Shape> shape = expandShape(ctx, condition.shape, onTrue.shape);
  if (succeeded(shape))
    shape = expandShape(ctx, *shape, onFalse.shape);
  if (failed(shape) || failed(fits(*shape)))
    return failure();
  Shape c = stridesOf(condition.shape), t = stridesOf(onTrue.shape),
        f = stridesOf(onFalse.shape);
  Literal result = Literal::like(*shape, onTrue.elementType);
  forEachIndex(*shape, [&](ArrayRef<int64_t> at) {
    if (condition.ints[broadcastIndex(at, condition.shape, c)])
      result.append(onTrue, broadcastIndex(at, onTrue.shape, t));
    else
      result.append(onFalse, broadcastIndex(at, onFalse.shape, f));
  });
  return result;
}

/// The elementwise float functions the folder evaluates.
double (*floatFunction(StringRef op))(double) {
  static const llvm::StringMap<double (*)(double)> kFunctions = {
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Sin", [](double x) { return std::sin(x); }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Reciprocal", [](double x) { return 1.0 / x; }},
      {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"Relu", [](double x) { return x > 0 ? x : 0.0; }}};
  return kFunctions.lookup(op);
}

FailureOr<Literal> Folder::unary(StringRef op, const Literal &input) {
  Literal result = input;
  if (op == "Neg") {
    for (double &value : result.floats)
      value = -value;
    for (int64_t &value : result.ints)
      value = wrap(0 - uint64_t(value));
    return result;
  }
  if (op == "IsNaN") {
    if (!input.isFloat())
      return ctx.error() << op << " takes floating-point tensors";
    result = Literal::like(input.shape, IntegerType::get(ctx.loc.getContext(), 1));
    for (double value : input.floats)
      result.ints.push_back(std::isnan(value));
    return result;
  }
  double (*function)(double) = floatFunction(op);
  assert(function && "not a unary op the folder knows");
  if (!input.isFloat())
    return ctx.error() << op << " takes floating-point tensors";
  for (double &value : result.floats)
    value = function(value);
  return result;
}

FailureOr<std::optional<SmallVector<Literal>>> Folder::fold() {
  StringRef op = ctx.node.op_type();
  if (op == "Shape")
    return one(shape());
  if (op == "Size")
    return one(size());
  // CastLike only reads its second input's element type.
  if (op == "CastLike" && literals[0])
    return one(castTo(
        in(0), cast<RankedTensorType>(inputs[1].getType()).getElementType()));
  if (!allConstant())
    return std::optional<SmallVector<Literal>>();
  // Inputs from this index on are integer parameters (shapes, axes, ...).
  static const llvm::StringMap<int> kIntegerInputsFrom = {
      {"Slice", 1},     {"Expand", 1},  {"Trilu", 1},          {"Reshape", 1},
      {"Unsqueeze", 1}, {"Squeeze", 1}, {"ConstantOfShape", 0}};
  auto integers = kIntegerInputsFrom.find(op);
  if (integers != kIntegerInputsFrom.end())
    for (int i = integers->second, e = literals.size(); i < e; ++i)
      if (literals[i] && literals[i]->isFloat())
        return ctx.error() << "input " << i << " ('" << ctx.inputName(i)
                           << "') must be INT64, found "
                           << literals[i]->elementType;
  if (op == "Gather")
    return one(gather());
  if (op == "Concat")
    return one(concat());
  if (op == "Slice")
    return one(slice());
  if (op == "Expand")
    return one(expand());
  if (op == "Transpose")
    return one(transpose());
  if (op == "Trilu")
    return one(trilu());
  if (op == "ConstantOfShape")
    return one(constantOfShape());
  if (op == "Range")
    return one(range());
  if (op == "Where")
    return one(where());
  if (op == "Neg" || op == "IsNaN" || floatFunction(op))
    return one(unary(op, in(0)));
  if (llvm::is_contained({"And", "Or", "Not"}, op))
    return one(logical(op));
  if (op == "CumSum")
    return one(cumSum());
  if (op == "GatherElements")
    return one(gatherAlongAxis());
  if (op == "GatherND")
    return one(gatherND());
  if (op == "Cast") {
    Builder builder(ctx.loc.getContext());
    Type to = convertElementType(intAttribute(ctx.node, "to", 0), builder);
    if (!to)
      return std::optional<SmallVector<Literal>>(); // importCast explains.
    return one(castTo(in(0), to));
  }
  if (llvm::is_contained({"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less",
                           "LessOrEqual", "Greater", "GreaterOrEqual"},
                          op))
    return one(arithmetic(op, in(0), in(1)));
  if (op == "Max" || op == "Min") {
    Literal result = in(0);
    for (size_t i = 1; i < literals.size(); ++i) {
      FailureOr<Literal> next = arithmetic(op, result, in(i));
      if (failed(next))
        return failure();
      result = std::move(*next);
    }
    return one(std::move(result));
  }
  const Literal &data = in(0);
  FailureOr<Shape> shape = failure();
  if (op == "Reshape")
    shape = reshapeShape(ctx, data.shape, in(1).ints,
                         intAttribute(ctx.node, "allowzero", 0) != 0);
  else if (op == "Unsqueeze")
    shape = unsqueezeShape(ctx, data.shape, in(1).ints);
  else if (op == "Squeeze")
    shape = squeezeShape(ctx, data.shape, optionalInts(1));
  else if (op == "Flatten")
    shape = flattenShape(ctx, data.shape, intAttribute(ctx.node, "axis", 1));
  else
    return std::optional<SmallVector<Literal>>();
  if (failed(shape))
    return failure();
  return one(reshapedTo(data, *shape));
}

} // namespace

FailureOr<std::optional<SmallVector<DenseElementsAttr>>>
foldNode(const NodeContext &ctx, ValueRange inputs) {
  SmallVector<std::optional<Literal>> literals;
  for (Value input : inputs) {
    DenseElementsAttr attr;
    if (input && matchPattern(input, m_Constant(&attr)))
      literals.push_back(Literal::fromAttr(attr));
    else
      literals.push_back(std::nullopt);
  }
  Folder folder(ctx, inputs, literals);
  FailureOr<std::optional<SmallVector<Literal>>> outputs = folder.fold();
  if (failed(outputs))
    return failure();
  if (!*outputs)
    return std::optional<SmallVector<DenseElementsAttr>>();
  SmallVector<DenseElementsAttr> attrs;
  for (const Literal &literal : **outputs)
    attrs.push_back(literal.toAttr());
  return std::optional<SmallVector<DenseElementsAttr>>(std::move(attrs));
}

} // namespace pp::onnx_frontend

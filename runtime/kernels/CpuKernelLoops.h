//===- CpuKernelLoops.h - loops shared by the host kernels ------*- C++ -*-===//
//
// The loop skeletons of the CPU kernels (runtime/kernels/Cpu*Kernels.cpp):
// operand checks, elementwise maps with NumPy broadcasting, row and axis
// walks, strided copies. Every kernel is deterministic: its arithmetic order
// depends only on the shapes, so a pipelined run matches the unpipelined
// one bit for bit. Reductions accumulate in double precision.
//
// A compute kernel is written once over the element type T of its float
// tensors (FloatElements.h): it checks its operands with floatOperandsType,
// runs its body for their type with forFloatType, reads through
// readFloats<T> and writes through writeFloats<T>, which are plain float
// pointers for f32 and convert each element for bf16 and f16.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_CPUKERNELLOOPS_H
#define PP_RUNTIME_KERNELS_CPUKERNELLOOPS_H

#include "runtime/core/Shapes.h"
#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/FloatOperands.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/MathFormulas.h"
#include "runtime/kernels/ParallelChunks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace pp::runtime::cpu {

/// Sets `out[i] = element(i)` (a float, rounded to T) for i in [begin,
/// end), in a loop that the compiler vectorizes (per PP_CPU_CLONES) when
/// `element` inlines.
template <typename T, typename Element>
PP_CPU_CLONES void fillRange(T *out, int64_t begin, int64_t end,
                             Element element) {
  for (int64_t i = begin; i < end; ++i)
    out[i] = storeFloat<T>(element(i));
}

/// fillRange over [0, count), in chunks on the thread pool.
template <typename T, typename Element>
void fillElements(T *out, int64_t count, Element element) {
  forEachChunk(count, 1, [&](int64_t begin, int64_t end) {
    fillRange(out, begin, end, element);
  });
}

/// Calls `kernel(flag)` with `flag` as a compile-time constant
/// (std::true_type or std::false_type), so that a loop inside the kernel
/// has no run-time branch on it: with one, the vectorizer if-converts the
/// branch and computes both sides for every element.
template <typename Kernel> auto withConstantFlag(bool flag, Kernel kernel) {
  return flag ? kernel(std::true_type()) : kernel(std::false_type());
}

/// The elements of a tensor of T, typed.
template <typename T> T *elementsOf(pp_tensor *tensor) {
  return static_cast<T *>(pp_tensor_data(tensor));
}

/// Reads elements of T as floats, as a `const float *` reads floats.
template <typename T> class FloatReader {
public:
  explicit FloatReader(const T *data) : data(data) {}
  float operator[](int64_t i) const { return loadFloat(data[i]); }
  FloatReader operator+(int64_t offset) const {
    return FloatReader(data + offset);
  }

private:
  const T *data;
};

/// Writes floats as elements of T (each rounded once), as a `float *`
/// writes floats; an element also reads back as a float.
template <typename T> class FloatWriter {
public:
  class Element {
  public:
    explicit Element(T *at) : at(at) {}
    void operator=(float value) { *at = storeFloat<T>(value); }
    operator float() const { return loadFloat(*at); }

  private:
    T *at;
  };

  explicit FloatWriter(T *data) : data(data) {}
  Element operator[](int64_t i) const { return Element(data + i); }
  FloatWriter operator+(int64_t offset) const {
    return FloatWriter(data + offset);
  }

private:
  T *data;
};

/// What reads and writes the elements of a float tensor of T as floats:
/// plain pointers for f32.
template <typename T>
using FloatsIn =
    std::conditional_t<std::is_same_v<T, float>, const float *, FloatReader<T>>;
template <typename T>
using FloatsOut =
    std::conditional_t<std::is_same_v<T, float>, float *, FloatWriter<T>>;

template <typename T> FloatsIn<T> readFloats(pp_tensor *tensor) {
  return FloatsIn<T>(elementsOf<T>(tensor));
}
template <typename T> FloatsOut<T> writeFloats(pp_tensor *tensor) {
  return FloatsOut<T>(elementsOf<T>(tensor));
}

/// The per-element formula of elementwise op `name` (ElementwiseFormulas.h)
/// as a lambda: the loops below inline it and vectorize, which they do not
/// through a function pointer.
#define PP_FORMULA(name)                                                       \
  [](auto... operands) { return elementwise::name(operands...); }

/// Runs `body(T())` for the float element type T of `dtype`, which
/// floatOperandsType accepted.
template <typename Body> void forFloatType(pp_dtype dtype, Body &&body) {
  visitFloatType(dtype, body);
}

/// A new tensor of `input`'s float type holding `function(i, input[i])`
/// for every element i. `function` is a template parameter so that the
/// loop inlines it.
template <typename Function>
inline pp_tensor *unaryIndexed(pp_frame *frame, const char *kernel,
                               pp_tensor *input, Function function) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, kernel, {input});
  pp_tensor *result =
      dtype ? newTensor(frame, *dtype, shapeOf(input)) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    const T *in = elementsOf<T>(input);
    fillElements(elementsOf<T>(result), pp_tensor_numel(input),
                 [&](int64_t i) { return function(i, loadFloat(in[i])); });
  });
  return result;
}

/// A new f32 tensor holding `function(x)` for every element x of `input`.
template <typename Function>
inline pp_tensor *unary(pp_frame *frame, const char *kernel, pp_tensor *input,
                        Function function) {
  return unaryIndexed(frame, kernel, input,
                      [&](int64_t, float x) { return function(x); });
}

/// Walks the rows (last dimension) of `shape` in row-major order, calling
/// `row(offsets)` with the element offset of the row's start in each of N
/// tensors, which move by `strides[t][d]` elements per step in dimension d
/// and start at `offsets`.
template <size_t N, typename Row>
inline void forEachRow(const Shape &shape, const std::array<Shape, N> &strides,
                       std::array<int64_t, N> offsets, Row row) {
  size_t rank = shape.size();
  int64_t inner = rank ? shape.back() : 1;
  int64_t rows = inner ? numElements(shape) / inner : 0;
  Shape index(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    row(offsets);
    // Advance the multi-index of the outer dimensions.
    for (size_t d = rank > 1 ? rank - 1 : 0; d-- > 0;) {
      ++index[d];
      for (size_t t = 0; t < N; ++t)
        offsets[t] += strides[t][d];
      if (index[d] < shape[d])
        break;
      for (size_t t = 0; t < N; ++t)
        offsets[t] -= strides[t][d] * index[d];
      index[d] = 0;
    }
  }
}

/// Walks the rows (last dimension) of `shape`, the NumPy broadcast of the
/// N operand shapes `operands`, calling `row(at, steps)` with the element
/// offset of the row's start in each operand and, last, in the row-major
/// result (`at`), and each one's stride along the row (`steps`: 1, or 0
/// for an operand broadcast along it).
template <size_t N, typename Row>
inline void forEachBroadcastRow(const std::array<Shape, N> &operands,
                                const Shape &shape, Row row) {
  std::array<Shape, N + 1> strides;
  std::array<int64_t, N + 1> steps;
  for (size_t t = 0; t < N; ++t)
    strides[t] = broadcastStrides(operands[t], shape);
  strides[N] = rowMajorStrides(shape);
  for (size_t t = 0; t <= N; ++t)
    steps[t] = shape.empty() ? 1 : strides[t].back();
  forEachRow(shape, strides, {},
             [&](const std::array<int64_t, N + 1> &at) { row(at, steps); });
}

/// The length of the rows forEachBroadcastRow walks.
inline int64_t rowLength(const Shape &shape) {
  return shape.empty() ? 1 : shape.back();
}

/// `shape`, a row-major tensor walked with a second set of `strides`, with
/// each run of adjacent dimensions that both walk as one dimension merged
/// into it and each dimension of size 1 dropped: the same elements in the
/// same order, in fewer and longer rows.
inline std::pair<Shape, Shape> mergeDimensions(const Shape &shape,
                                               const Shape &strides) {
  Shape merged, mergedStrides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!merged.empty() && mergedStrides.back() == strides[d] * shape[d]) {
      merged.back() *= shape[d];
      mergedStrides.back() = strides[d];
      continue;
    }
    merged.push_back(shape[d]);
    mergedStrides.push_back(strides[d]);
  }
  return {merged, mergedStrides};
}

/// Walks a row-major tensor of `shape` whose element i belongs to group
/// `sum(index(i)[d] * groupStrides[d])`, calling `row(first, group, step,
/// length)` for each run of `length` consecutive elements starting at
/// element `first`, of which element `first + j` belongs to group `group +
/// j * step` (step 0: all to one group), in row-major order.
template <typename Row>
inline void forEachGroupedRow(const Shape &shape, const Shape &groupStrides,
                              Row row) {
  auto [merged, strides] = mergeDimensions(shape, groupStrides);
  int64_t length = rowLength(merged);
  int64_t step = merged.empty() ? 0 : strides.back();
  int64_t first = 0;
  forEachRow<1>(merged, {strides}, {0}, [&](std::array<int64_t, 1> group) {
    row(first, group[0], step, length);
    first += length;
  });
}

/// Adds each element of the row-major tensor `in` of `shape` (read as
/// floats: FloatsIn) to its group's sum in `sums` (groups as in
/// forEachGroupedRow) in row-major order: each sum's order of additions
/// depends only on the shapes.
template <typename Floats>
inline void accumulateGroups(const Shape &shape, const Shape &groupStrides,
                             Floats in, double *sums) {
  forEachGroupedRow(
      shape, groupStrides,
      [&](int64_t first, int64_t group, int64_t step, int64_t length) {
        Floats values = in + first;
        double *to = sums + group;
        if (step == 0) {
          double sum = *to;
          for (int64_t j = 0; j < length; ++j)
            sum += values[j];
          *to = sum;
        } else if (step == 1) {
          for (int64_t j = 0; j < length; ++j)
            to[j] += values[j];
        } else {
          for (int64_t j = 0; j < length; ++j)
            to[j * step] += values[j];
        }
      });
}

/// Elementwise `function(lhs, rhs)` with NumPy broadcasting.
template <typename Function>
inline pp_tensor *binary(pp_frame *frame, const char *kernel, pp_tensor *lhs,
                         pp_tensor *rhs, Function function) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, kernel, {lhs, rhs});
  std::optional<Shape> shape =
      dtype ? broadcastOperands(frame, kernel, {lhs, rhs}) : std::nullopt;
  pp_tensor *result = shape ? newTensor(frame, *dtype, *shape) : nullptr;
  if (!result)
    return nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    const T *a = elementsOf<T>(lhs), *b = elementsOf<T>(rhs);
    T *out = elementsOf<T>(result);
    Shape lhsShape = shapeOf(lhs), rhsShape = shapeOf(rhs);
    if (lhsShape == rhsShape) {
      fillElements(out, numElements(*shape), [&](int64_t i) {
        return function(loadFloat(a[i]), loadFloat(b[i]));
      });
      return;
    }
    int64_t inner = rowLength(*shape);
    forEachBroadcastRow<2>(
        {lhsShape, rhsShape}, *shape, [&](const auto &at, const auto &steps) {
          const T *pa = a + at[0], *pb = b + at[1];
          int64_t stepA = steps[0], stepB = steps[1];
          fillElements(out + at[2], inner, [&](int64_t j) {
            return function(loadFloat(pa[j * stepA]), loadFloat(pb[j * stepB]));
          });
        });
  });
  return result;
}

/// Moves the elements `copy` describes from `source` to `dest`, which have
/// the same dtype (any).
inline void runStridedCopy(const StridedCopy &copy, pp_tensor *source,
                           pp_tensor *dest) {
  const char *from = static_cast<const char *>(pp_tensor_data(source));
  char *to = static_cast<char *>(pp_tensor_data(dest));
  size_t elementSize = pp_dtype_size(pp_tensor_dtype(source));
  int64_t inner = copy.shape.empty() ? 1 : copy.shape.back();
  int64_t fromInner = copy.shape.empty() ? 1 : copy.sourceStrides.back();
  int64_t toInner = copy.shape.empty() ? 1 : copy.destStrides.back();
  forEachRow<2>(
      copy.shape, {copy.sourceStrides, copy.destStrides},
      {copy.sourceOffset, copy.destOffset}, [&](std::array<int64_t, 2> at) {
        if (fromInner == 1 && toInner == 1) {
          std::memcpy(to + at[1] * elementSize, from + at[0] * elementSize,
                      inner * elementSize);
          return;
        }
        visitBits(elementSize, [&](auto bits) {
          using T = decltype(bits);
          const T *in = reinterpret_cast<const T *>(from) + at[0];
          T *out = reinterpret_cast<T *>(to) + at[1];
          for (int64_t j = 0; j < inner; ++j)
            out[j * toInner] = in[j * fromInner];
        });
      });
}

/// A new tensor of T shaped like `input`, computed line by line along
/// `axis` (lines in chunks on the thread pool): `line(out, start, stride,
/// size)` writes the `size` elements at `start + k * stride` of `out`
/// (FloatsOut<T>). Null, with the error recorded in `frame`, when `input`
/// has no such axis.
template <typename T, typename Line>
inline pp_tensor *alongAxis(pp_frame *frame, const char *kernel,
                            pp_tensor *input, int64_t axis, Line line) {
  std::string error;
  std::optional<AxisLayout> layout =
      axisLayout(shapeOf(input), axis, kernel, error);
  if (!layout) {
    failFrame(frame, error);
    return nullptr;
  }
  pp_tensor *result = newTensor(frame, floatDtype<T>(), shapeOf(input));
  if (!result)
    return nullptr;
  FloatsOut<T> out = writeFloats<T>(result);
  int64_t inner = layout->inner, size = layout->size;
  forEachChunk(layout->outer * inner, size, [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end; ++l)
      line(out, (l / inner) * size * inner + l % inner, inner, size);
  });
  return result;
}

/// alongAxis over `input`'s float type: `line(out, in, start, stride,
/// size)` also gets the input's elements (FloatsIn).
template <typename Line>
inline pp_tensor *mapAlongAxis(pp_frame *frame, const char *kernel,
                               pp_tensor *input, int64_t axis, Line line) {
  std::optional<pp_dtype> dtype = floatOperandsType(frame, kernel, {input});
  pp_tensor *result = nullptr;
  if (dtype)
    forFloatType(*dtype, [&](auto element) {
      using T = decltype(element);
      FloatsIn<T> in = readFloats<T>(input);
      result = alongAxis<T>(
          frame, kernel, input, axis,
          [&](FloatsOut<T> out, int64_t start, int64_t stride, int64_t size) {
            line(out, in, start, stride, size);
          });
    });
  return result;
}

/// alongAxis for the gradient of a softmax-like op, whose `grad` and forward
/// `result` are tensors of one float type and shape: `line(out, g, y,
/// start, stride, size)` also gets their elements.
template <typename Line>
inline pp_tensor *gradAlongAxis(pp_frame *frame, const char *kernel,
                                pp_tensor *grad, pp_tensor *result,
                                int64_t axis, Line line) {
  std::optional<pp_dtype> dtype =
      floatOperandsType(frame, kernel, {grad, result});
  if (!dtype)
    return nullptr;
  if (shapeOf(grad) != shapeOf(result)) {
    failFrame(frame, std::string(kernel) + ": grad " +
                         formatShape(shapeOf(grad)) + " and result " +
                         formatShape(shapeOf(result)) + " differ");
    return nullptr;
  }
  pp_tensor *gradient = nullptr;
  forFloatType(*dtype, [&](auto element) {
    using T = decltype(element);
    FloatsIn<T> g = readFloats<T>(grad), y = readFloats<T>(result);
    gradient = alongAxis<T>(
        frame, kernel, grad, axis,
        [&](FloatsOut<T> out, int64_t start, int64_t stride, int64_t size) {
          line(out, g, y, start, stride, size);
        });
  });
  return gradient;
}

/// A rank-0 tensor of `dtype` (a float type) holding `value`.
inline pp_tensor *scalar(pp_frame *frame, double value, pp_dtype dtype) {
  pp_tensor *result = newTensor(frame, dtype, {});
  if (result)
    forFloatType(dtype, [&](auto element) {
      using T = decltype(element);
      elementsOf<T>(result)[0] = storeFloat<T>(static_cast<float>(value));
    });
  return result;
}

/// Writes rows [first, first + rows) of the table gather_grad computes for
/// the gather `plan` and its result's gradient `grad` to `out` (outer x rows
/// x inner; FloatsIn and FloatsOut of one type): each element sums the
/// slices that gathered it, in index order, in double (the CUDA kernel's
/// order and precision).
template <typename In, typename Out>
inline void sumGatheredSlices(const GatherPlan &plan, In grad, int64_t first,
                              int64_t rows, Out out, bool addToOut = false) {
  const AxisLayout &layout = plan.layout;
  IndexGroups groups = groupIndices(plan.rows, layout.size);
  int64_t count = static_cast<int64_t>(plan.rows.size());
  std::vector<double> sums(layout.inner);
  for (int64_t o = 0; o < layout.outer; ++o)
    for (int64_t r = 0; r < rows; ++r) {
      // Adding a row that no index names would add zeros.
      if (addToOut &&
          groups.offsets[first + r] == groups.offsets[first + r + 1])
        continue;
      std::fill(sums.begin(), sums.end(), 0.0);
      for (int64_t k = groups.offsets[first + r];
           k < groups.offsets[first + r + 1]; ++k) {
        In slice = grad + (o * count + groups.positions[k]) * layout.inner;
        for (int64_t i = 0; i < layout.inner; ++i)
          sums[i] += slice[i];
      }
      Out row = out + (o * rows + r) * layout.inner;
      for (int64_t i = 0; i < layout.inner; ++i)
        row[i] = addToOut ? row[i] + static_cast<float>(sums[i])
                          : static_cast<float>(sums[i]);
    }
}

} // namespace pp::runtime::cpu

#endif // PP_RUNTIME_KERNELS_CPUKERNELLOOPS_H

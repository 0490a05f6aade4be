//===- SharedInitializers.cpp - Initializers that several nodes read ------===//
//
// torch.onnx.export (PyTorch 1.13 and 2.x) merges initializers with equal
// values into one: a fresh transformer's LayerNorm weights (all ones) or
// zero biases become one initializer that every layer reads, which pp
// would train as one tied parameter. By default every node that reads such
// an initializer, one whose elements all have the same bits, gets its own
// copy; `--untie-shared-weights` unties the others too: weights tied on
// purpose (tied embeddings), and random values that the export merged
// (nn.TransformerEncoder's cloned layers). The other way round, constant
// folding turns a tied LM head's transposed embedding into a second
// initializer; `--tie-equal-weights` ties such bitwise copies and
// transposes again.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/GraphImporter.h"

#include <cstring>
#include <map>
#include <optional>

using namespace mlir;

namespace pp::onnx_frontend {

bool isFloatDataType(int32_t dataType) {
  return dataType == onnx::TensorProto::FLOAT ||
         dataType == onnx::TensorProto::FLOAT16 ||
         dataType == onnx::TensorProto::BFLOAT16 ||
         dataType == onnx::TensorProto::DOUBLE;
}

/// Whether every element of `tensor` has the same bits, as the fresh ones
/// and zeros that exporters merge do; false for data in an external file.
static bool hasUniformElements(const onnx::TensorProto &tensor) {
  if (tensor.has_raw_data()) {
    size_t size = tensor.data_type() == onnx::TensorProto::DOUBLE  ? 8
                  : tensor.data_type() == onnx::TensorProto::FLOAT ? 4
                                                                   : 2;
    const std::string &raw = tensor.raw_data();
    for (size_t offset = size; offset + size <= raw.size(); offset += size)
      if (raw.compare(offset, size, raw, 0, size) != 0)
        return false;
    return true;
  }
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return false;
  auto sameBits = [](const auto &field) {
    return llvm::all_of(field, [&](auto value) {
      return std::memcmp(&value, &field.Get(0), sizeof(value)) == 0;
    });
  };
  // ONNX keeps 16-bit floats in int32_data, one value each.
  return sameBits(tensor.float_data()) && sameBits(tensor.double_data()) &&
         sameBits(tensor.int32_data());
}

using ReadersByName = std::map<std::string, SmallVector<int>, std::less<>>;

/// The indices of the nodes that read each of the initializers in
/// `parameters` that more than one node reads, in node order; a node that
/// reads it twice counts once.
static ReadersByName sharedReaders(const onnx::GraphProto &graph,
                                   const llvm::StringSet<> &parameters) {
  ReadersByName readers;
  for (const auto &[index, node] : llvm::enumerate(graph.node()))
    for (const std::string &input : node.input())
      if (parameters.contains(input)) {
        SmallVector<int> &nodes = readers[input];
        if (nodes.empty() || nodes.back() != static_cast<int>(index))
          nodes.push_back(index);
      }
  for (auto it = readers.begin(); it != readers.end();)
    it = it->second.size() < 2 ? readers.erase(it) : std::next(it);
  return readers;
}

SharedInitializers findSharedInitializers(const onnx::GraphProto &graph,
                                          const llvm::StringSet<> &parameters) {
  SharedInitializers shared;
  for (const auto &[name, nodes] : sharedReaders(graph, parameters)) {
    ++shared.count;
    if (nodes.size() > shared.mostReaders) {
      shared.mostReaders = nodes.size();
      shared.example = name;
    }
  }
  return shared;
}

int64_t untieSharedInitializers(onnx::GraphProto &graph, bool all,
                                llvm::StringSet<> &parameters) {
  ReadersByName readers = sharedReaders(graph, parameters);
  if (!all)
    for (const onnx::TensorProto &init : graph.initializer())
      if (auto it = readers.find(init.name());
          it != readers.end() && !hasUniformElements(init))
        readers.erase(it);
  if (readers.empty())
    return 0;
  // The copies' names must not be a name the model uses already.
  llvm::StringSet<> taken;
  for (const onnx::ValueInfoProto &input : graph.input())
    taken.insert(input.name());
  for (const onnx::TensorProto &init : graph.initializer())
    taken.insert(init.name());
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &output : node.output())
      taken.insert(output);
  // Each copy follows its original in the initializer list (the order of
  // pp's parameters).
  google::protobuf::RepeatedPtrField<onnx::TensorProto> untied;
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    onnx::TensorProto *original = untied.Add();
    original->Swap(&init);
    auto shared = readers.find(original->name());
    if (shared == readers.end())
      continue;
    int suffix = 0;
    for (int node : llvm::drop_begin(shared->second)) {
      std::string name;
      do
        name = original->name() + "." + std::to_string(++suffix);
      while (taken.contains(name));
      taken.insert(name);
      parameters.insert(name);
      for (std::string &input : *graph.mutable_node(node)->mutable_input())
        if (input == original->name())
          input = name;
      onnx::TensorProto *copy = untied.Add();
      *copy = *original;
      copy->set_name(name);
    }
  }
  graph.mutable_initializer()->Swap(&untied);
  return readers.size();
}

size_t elementBytes(int32_t dataType) {
  return dataType == onnx::TensorProto::DOUBLE  ? 8
         : dataType == onnx::TensorProto::FLOAT ? 4
                                                : 2;
}

std::optional<StringRef> rawElements(const onnx::TensorProto &tensor) {
  if (tensor.has_raw_data())
    return StringRef(tensor.raw_data());
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return std::nullopt;
  if (tensor.data_type() == onnx::TensorProto::FLOAT)
    return StringRef(reinterpret_cast<const char *>(tensor.float_data().data()),
                     tensor.float_data_size() * sizeof(float));
  if (tensor.data_type() == onnx::TensorProto::DOUBLE)
    return StringRef(
        reinterpret_cast<const char *>(tensor.double_data().data()),
        tensor.double_data_size() * sizeof(double));
  return std::nullopt;
}

namespace {
/// A floating-point initializer's elements as a rows x columns matrix (one
/// row but for 2-D ones), and two digests of them: that of the matrix and
/// that of its transpose. Each sums a mix of every element's bits with its
/// (row, column), which the transpose swaps, so both come from one pass in
/// memory order and equal matrices, or a matrix and its transpose, have
/// equal digests.
struct Elements {
  const onnx::TensorProto *tensor;
  StringRef raw;
  int64_t rows, columns;
  size_t size;
  uint64_t digest = 0, transposedDigest = 0;

  Elements(const onnx::TensorProto &tensor, StringRef raw)
      : tensor(&tensor), raw(raw), size(elementBytes(tensor.data_type())) {
    columns = tensor.dims_size() == 2 ? tensor.dims(1) : raw.size() / size;
    rows = columns == 0 ? 0 : raw.size() / size / columns;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t column = 0; column < columns; ++column) {
        uint64_t bits = at(row, column);
        digest += mix(bits ^ mix(position(row, column)));
        transposedDigest += mix(bits ^ mix(position(column, row)));
      }
  }

  /// The bits of the element at (row, column).
  uint64_t at(int64_t row, int64_t column) const {
    uint64_t bits = 0;
    std::memcpy(&bits, raw.data() + (row * columns + column) * size, size);
    return bits;
  }

  /// Whether `other`'s elements are the transpose of these, bit for bit.
  bool isTransposeOf(const Elements &other) const {
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t column = 0; column < columns; ++column)
        if (at(row, column) != other.at(column, row))
          return false;
    return true;
  }

  static uint64_t position(int64_t row, int64_t column) {
    return static_cast<uint64_t>(row) * 0x9E3779B97F4A7C15ull ^
           static_cast<uint64_t>(column);
  }
  /// SplitMix64's finalizer.
  static uint64_t mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
};
} // namespace

std::string transposed(StringRef raw, int64_t rows, int64_t columns,
                       size_t size) {
  std::string result(raw.size(), '\0');
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < columns; ++column)
      std::memcpy(&result[(column * rows + row) * size],
                  raw.data() + (row * columns + column) * size, size);
  return result;
}

std::vector<EqualInitializer>
findEqualInitializers(const onnx::GraphProto &graph) {
  // Initializers no earlier one equals, the candidates later ones may copy,
  // by their digest and by that of their transpose (2-D ones).
  std::vector<Elements> originals;
  std::multimap<uint64_t, size_t> byDigest, byTransposedDigest;
  std::vector<EqualInitializer> equal;
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (!isFloatDataType(init.data_type()) || hasUniformElements(init))
      continue;
    std::optional<StringRef> raw = rawElements(init);
    if (!raw)
      continue;
    Elements elements(init, *raw);
    auto sameType = [&](const onnx::TensorProto &other) {
      return other.data_type() == init.data_type() &&
             other.dims_size() == init.dims_size();
    };
    const onnx::TensorProto *original = nullptr;
    bool isTranspose = false;
    for (auto [it, end] = byDigest.equal_range(elements.digest); it != end;
         ++it) {
      const Elements &candidate = originals[it->second];
      if (sameType(*candidate.tensor) &&
          llvm::equal(candidate.tensor->dims(), init.dims()) &&
          candidate.raw == *raw) {
        original = candidate.tensor;
        break;
      }
    }
    if (!original && init.dims_size() == 2)
      for (auto [it, end] = byTransposedDigest.equal_range(elements.digest);
           it != end; ++it) {
        const Elements &candidate = originals[it->second];
        const onnx::TensorProto &other = *candidate.tensor;
        if (sameType(other) && other.dims(0) == init.dims(1) &&
            other.dims(1) == init.dims(0) &&
            candidate.rows == elements.columns &&
            candidate.columns == elements.rows &&
            elements.isTransposeOf(candidate)) {
          original = &other;
          isTranspose = true;
          break;
        }
      }
    if (original) {
      equal.push_back({original->name(), init.name(), isTranspose});
      continue;
    }
    byDigest.emplace(elements.digest, originals.size());
    if (init.dims_size() == 2)
      byTransposedDigest.emplace(elements.transposedDigest, originals.size());
    originals.push_back(elements);
  }
  return equal;
}

void tieEqualInitializers(onnx::GraphProto &graph,
                          ArrayRef<EqualInitializer> equal) {
  for (const EqualInitializer &tie : equal) {
    auto &inits = *graph.mutable_initializer();
    inits.erase(llvm::find_if(inits, [&](const onnx::TensorProto &init) {
      return init.name() == tie.copy;
    }));
    // Old exporters list initializers among the graph's inputs too.
    auto &inputs = *graph.mutable_input();
    if (auto it = llvm::find_if(inputs,
                                [&](const onnx::ValueInfoProto &input) {
                                  return input.name() == tie.copy;
                                });
        it != inputs.end())
      inputs.erase(it);
    if (!tie.transposed) {
      for (onnx::NodeProto &node : *graph.mutable_node())
        for (std::string &input : *node.mutable_input())
          if (input == tie.copy)
            input = tie.original;
      continue;
    }
    // The transpose runs right before its first reader, on that reader's
    // stage, so that the original is what the stages share.
    insertTranspose(graph, "tie:" + tie.copy, tie.original, tie.copy);
  }
}

void insertTranspose(onnx::GraphProto &graph, const std::string &nodeName,
                     const std::string &input, const std::string &output) {
  auto &nodes = *graph.mutable_node();
  auto firstReader = llvm::find_if(nodes, [&](const onnx::NodeProto &node) {
    return llvm::is_contained(node.input(), output);
  });
  onnx::NodeProto transpose;
  transpose.set_name(nodeName);
  transpose.set_op_type("Transpose");
  transpose.add_input(input);
  transpose.add_output(output);
  onnx::AttributeProto *perm = transpose.add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  int at = firstReader - nodes.begin();
  nodes.Add(std::move(transpose));
  for (int i = nodes.size() - 1; i > at; --i)
    nodes.SwapElements(i, i - 1);
}

} // namespace pp::onnx_frontend

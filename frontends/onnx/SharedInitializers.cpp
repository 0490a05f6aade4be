//===- SharedInitializers.cpp - Initializers that several nodes read ------===//
//
// torch.onnx.export (PyTorch 1.13 and 2.x) merges initializers with equal
// values into one: a fresh transformer's LayerNorm weights (all ones) or
// zero biases become one initializer that every layer reads, which pp
// would train as one tied parameter. By default every node that reads such
// an initializer, one whose elements all have the same bits, gets its own
// copy; `--untie-shared-weights` unties the others too: weights tied on
// purpose (tied embeddings), and random values that the export merged
// (nn.TransformerEncoder's cloned layers).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/GraphImporter.h"

#include <cstring>
#include <map>

using namespace mlir;

namespace pp::onnx_frontend {

static bool isFloatDataType(int32_t dataType) {
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

/// The indices of the nodes that read each floating-point initializer
/// (pp's parameters) that more than one node reads, in node order; a node
/// that reads it twice counts once.
static ReadersByName sharedReaders(const onnx::GraphProto &graph) {
  llvm::StringSet<> parameters;
  for (const onnx::TensorProto &init : graph.initializer())
    if (isFloatDataType(init.data_type()))
      parameters.insert(init.name());
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

SharedInitializers findSharedInitializers(const onnx::GraphProto &graph) {
  SharedInitializers shared;
  for (const auto &[name, nodes] : sharedReaders(graph)) {
    ++shared.count;
    if (nodes.size() > shared.mostReaders) {
      shared.mostReaders = nodes.size();
      shared.example = name;
    }
  }
  return shared;
}

int64_t untieSharedInitializers(onnx::GraphProto &graph, bool all) {
  ReadersByName readers = sharedReaders(graph);
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

} // namespace pp::onnx_frontend

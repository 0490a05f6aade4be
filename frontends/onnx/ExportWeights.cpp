//===- ExportWeights.cpp - trained parameters back into ONNX --------------===//

#include "frontends/onnx/ExportWeights.h"

#include "frontends/onnx/ExternalData.h"
#include "frontends/onnx/GraphImporter.h"
#include "runtime/core/ElementTypes.h"
#include "runtime/core/InputFile.h"
#include "runtime/core/OutputFile.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

namespace pp::onnx_frontend {

/// `values` (f32 master copies) as the little-endian bytes of ONNX's
/// raw_data for an initializer of `type`: FLOAT as they are, FLOAT16 and
/// BFLOAT16 rounded to nearest even (the
/// model's own type, as training it in f32 master copies left it); empty
/// for another type.
static std::optional<std::string>
littleEndianBytes(const std::vector<float> &values, int type) {
  auto encode = [&](auto element, auto convert) {
    using T = decltype(element);
    std::string bytes(values.size() * sizeof(T), '\0');
    for (size_t i = 0; i < values.size(); ++i)
      llvm::support::endian::write<T, llvm::endianness::little>(
          bytes.data() + i * sizeof(T), convert(values[i]));
    return bytes;
  };
  switch (type) {
  case onnx::TensorProto::FLOAT:
    return encode(float(), [](float value) { return value; });
  case onnx::TensorProto::FLOAT16:
    return encode(uint16_t(),
                  [](float value) { return runtime::toHalf(value).bits; });
  case onnx::TensorProto::BFLOAT16:
    return encode(uint16_t(),
                  [](float value) { return runtime::toBFloat16(value).bits; });
  default:
    return std::nullopt;
  }
}

namespace {
/// The initializers' bytes, moved out of the model, as one external data
/// file.
struct ExternalDataFile {
  std::vector<std::unique_ptr<std::string>> bytes;
  std::vector<runtime::FilePiece> pieces;
};
} // namespace

/// Points every initializer of `graph` with raw data at its place in one
/// external data file, `location` beside the model, 64-byte aligned (as
/// onnx.save_model(..., save_as_external_data=True) does), moving the bytes
/// into the file's pieces.
static ExternalDataFile moveToExternalData(onnx::GraphProto &graph,
                                           const std::string &location) {
  static const char padding[64] = {};
  ExternalDataFile file;
  uint64_t offset = 0;
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    if (!init.has_raw_data())
      continue;
    if (uint64_t misaligned = offset % sizeof(padding)) {
      file.pieces.push_back({padding, sizeof(padding) - misaligned});
      offset += sizeof(padding) - misaligned;
    }
    const std::string &raw = *file.bytes.emplace_back(init.release_raw_data());
    file.pieces.push_back({raw.data(), raw.size()});
    init.set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] :
         {std::pair<std::string, std::string>{"location", location},
          {"offset", std::to_string(offset)},
          {"length", std::to_string(raw.size())}}) {
      onnx::StringStringEntryProto *entry = init.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    offset += raw.size();
  }
  return file;
}

/// Writes the trained `weight` back as the model stored it: its transpose,
/// in the initializer `weight.stored`, in place of the Transpose node that
/// the import read it through. The parameter's initializer stays only
/// while other nodes read it (a tied LM head's embedding).
static void storeTransposed(onnx::GraphProto &graph,
                            const TransposedWeight &weight) {
  auto &nodes = *graph.mutable_node();
  auto transpose = llvm::find_if(nodes, [&](const onnx::NodeProto &node) {
    return node.name() == (kTransposeNodePrefix + weight.stored).str();
  });
  // Untying may have given the Transpose a copy of the parameter.
  std::string parameter = transpose->input(0);
  nodes.erase(transpose);
  auto &inits = *graph.mutable_initializer();
  auto trained = llvm::find_if(inits, [&](const onnx::TensorProto &init) {
    return init.name() == parameter;
  });
  onnx::TensorProto stored = *trained;
  stored.set_name(weight.stored);
  stored.set_dims(0, trained->dims(1));
  stored.set_dims(1, trained->dims(0));
  stored.set_raw_data(transposed(trained->raw_data(), trained->dims(0),
                                 trained->dims(1),
                                 elementBytes(trained->data_type())));
  bool read = llvm::any_of(nodes, [&](const onnx::NodeProto &node) {
    return llvm::is_contained(node.input(), parameter);
  });
  if (read)
    *inits.Add() = std::move(stored);
  else
    *trained = std::move(stored);
}

int64_t exportTrainedWeights(
    const std::string &modelPath, bool untieSharedWeights, bool tieEqualWeights,
    const std::map<std::string, runtime::ParameterValues> &parameters,
    const std::string &outputPath) {
  auto fail = [&](const std::string &problem) {
    throw std::runtime_error("cannot export the trained weights of '" +
                             modelPath + "' to '" + outputPath +
                             "': " + problem);
  };
  runtime::InputFile input = runtime::InputFile::open(modelPath, "the model");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> contents =
      llvm::MemoryBuffer::getOpenFile(input.fd(), modelPath, input.size());
  if (!contents)
    fail("cannot read the model: " + contents.getError().message());
  onnx::ModelProto model;
  if (std::string problem =
          parseOnnxModel((*contents)->getBuffer(), modelPath, model);
      !problem.empty())
    fail(problem);
  contents->reset();
  std::vector<onnx::TensorProto *> external;
  if (std::string problem = loadExternalData(model, modelPath, &external);
      !problem.empty())
    fail(problem);
  // The graph as the import saw it: the trained initializers (weights
  // stored transposed in their module layout), re-tied equal ones (written
  // once, a Transpose where one was the other's transpose), then untied
  // copies.
  ImportOptions options;
  options.untieSharedWeights = untieSharedWeights;
  options.tieEqualWeights = tieEqualWeights;
  onnx::GraphProto &graph = *model.mutable_graph();
  PreparedGraph prepared = prepareGraph(graph, options);

  std::set<std::string> exported;
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    auto parameter = parameters.find(init.name());
    if (parameter == parameters.end() ||
        !prepared.plan.trained.contains(init.name()))
      continue;
    const std::string quoted = "'" + init.name() + "'";
    std::optional<std::string> bytes =
        littleEndianBytes(parameter->second.values, init.data_type());
    if (!bytes)
      fail("the initializer " + quoted + " is " +
           onnxTypeName(init.data_type()) +
           ", but a trained parameter is a float (FLOAT, FLOAT16 or BFLOAT16 "
           "in the model); the parameters come from another model");
    runtime::Shape shape(init.dims().begin(), init.dims().end());
    if (shape != parameter->second.shape)
      fail("the trained parameter " + quoted + " has the shape " +
           runtime::formatShape(parameter->second.shape) +
           ", but the model's initializer " + runtime::formatShape(shape) +
           "; the parameters come from another model");
    init.clear_float_data();
    init.clear_int32_data();
    init.clear_double_data();
    init.clear_external_data();
    init.clear_data_location();
    init.set_raw_data(std::move(*bytes));
    exported.insert(init.name());
  }
  for (const auto &[name, values] : parameters)
    if (!exported.count(name))
      fail("the trained parameter '" + name +
           "' is no initializer of the model; the parameters come from "
           "another model");

  for (const TransposedWeight &weight : prepared.plan.transposed)
    storeTransposed(graph, weight);

  std::string dataPath = outputPath + ".data";
  ExternalDataFile data;
  if (!external.empty())
    data = moveToExternalData(*model.mutable_graph(),
                              llvm::sys::path::filename(dataPath).str());
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    fail("the model with the trained weights does not fit in one ONNX "
         "protobuf (2 GiB)");
  if (!external.empty())
    runtime::writeOutputFile(dataPath, data.pieces, "the external data file");
  runtime::writeOutputFile(outputPath, bytes, "the exported model");
  return static_cast<int64_t>(exported.size());
}

} // namespace pp::onnx_frontend

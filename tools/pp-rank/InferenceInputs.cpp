//===- InferenceInputs.cpp - the input files of a forward-only run --------===//

#include "tools/pp-rank/InferenceInputs.h"

#include "tools/pp-rank/TensorFiles.h"

#include <optional>
#include <stdexcept>
#include <string>

using namespace pp::runtime;

std::pair<std::vector<TensorPtr>, int64_t>
loadInferenceInputs(const Package &package, const InferenceJob &job) {
  const std::vector<std::string> &inputFiles = job.inputs;
  if (inputFiles.size() != package.inputs.size())
    throw std::runtime_error(
        "--inputs names " + std::to_string(inputFiles.size()) +
        " files, but the model has " + std::to_string(package.inputs.size()) +
        " inputs; give one file per input, in the model's order");
  std::vector<TensorPtr> tensors;
  std::optional<int64_t> microbatches;
  for (size_t i = 0; i < inputFiles.size(); ++i) {
    const TensorInfo &declared = package.inputs[i];
    TensorPtr tensor = readTensorFile(inputFiles[i]).tensor;
    Shape shape = shapeOf(tensor.get());
    pp_dtype dtype = pp_tensor_dtype(tensor.get());
    auto describe = [](const Shape &shape, pp_dtype dtype) {
      return (shape.empty() ? std::string("scalar") : formatShape(shape)) +
             " " + pp_dtype_name(dtype);
    };
    std::string problem =
        "input '" + declared.name + "' (" + inputFiles[i] + ") is " +
        describe(shape, dtype) + ", but the model takes " +
        describe(declared.shape, declared.dtype);
    bool rowsMatch = !job.asGiven && !declared.shape.empty() &&
                     !shape.empty() &&
                     declared.shape[0] > 0 &&
                     shape[0] % declared.shape[0] == 0 &&
                     Shape(shape.begin() + 1, shape.end()) ==
                         Shape(declared.shape.begin() + 1, declared.shape.end());
    if (dtype != declared.dtype ||
        (shape != declared.shape && !rowsMatch))
      throw std::runtime_error(
          problem +
          (job.asGiven
               ? " (without --microbatch-size the model runs as given, one "
                 "microbatch of its shapes)"
           : declared.shape.empty() || package.microbatchSize == 1
               ? ""
               : " (or a multiple of its microbatch of " +
                     std::to_string(declared.shape[0]) +
                     " along dimension 0)"));
    int64_t count = shape == declared.shape ? 1 : shape[0] / declared.shape[0];
    if (microbatches && *microbatches != count)
      throw std::runtime_error(problem + ": it holds " + std::to_string(count) +
                               " microbatches, an earlier input " +
                               std::to_string(*microbatches));
    microbatches = count;
    tensors.push_back(std::move(tensor));
  }
  int64_t count = microbatches.value_or(1);
  for (const OutputInfo &output : package.outputs)
    if (count > 1 && output.tensor.shape.empty())
      throw std::runtime_error(
          "output '" + output.tensor.name + "' is a scalar, which cannot be "
          "concatenated over " + std::to_string(count) +
          " microbatches; run the whole batch as one microbatch");
  return {std::move(tensors), count};
}


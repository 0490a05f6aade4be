//===- InferenceInputs.h - the input files of a forward-only run -*- C++ -*-===//
//
// `pp-run --infer` and its ranks read one ONNX TensorProto file per model
// input (TensorFiles.h) and check it against the package.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RANK_INFERENCEINPUTS_H
#define PP_TOOLS_PP_RANK_INFERENCEINPUTS_H

#include "runtime/package/Package.h"
#include "runtime/training/JobDescription.h"

#include <utility>
#include <vector>

/// The input files of `job` checked against `package`'s inputs: same
/// count, dtype and trailing dimensions, and dimension 0 a multiple of the
/// microbatch size, the same multiple for all (the microbatch count); the
/// same shapes when the model runs as given. Returns the tensors and the
/// microbatch count. Throws std::runtime_error naming the input and both
/// shapes.
std::pair<std::vector<pp::runtime::TensorPtr>, int64_t>
loadInferenceInputs(const pp::runtime::Package &package,
                    const pp::runtime::InferenceJob &job);

#endif // PP_TOOLS_PP_RANK_INFERENCEINPUTS_H

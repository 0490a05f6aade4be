//===- TensorFiles.h - tensors in ONNX TensorProto files --------*- C++ -*-===//
//
// `pp-run --infer` reads its inputs from and writes its outputs to files
// holding one serialized onnx.TensorProto each, the format of the ONNX
// backend tests (`input_0.pb`, `output_0.pb`) and of
// `onnx.numpy_helper.from_array(...).SerializeToString()`.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_RANK_TENSORFILES_H
#define PP_TOOLS_PP_RANK_TENSORFILES_H

#include "runtime/core/Shapes.h"
#include "runtime/training/Backend.h"

#include <string>

/// A tensor read from a file and the name the file gives it ("" if none).
struct TensorFile {
  std::string name;
  pp::runtime::TensorPtr tensor;
};

/// Reads the TensorProto file `path` into a host tensor: f32, f64, i64,
/// i32 or bool, from raw_data or the typed value fields. Throws
/// std::runtime_error naming the file and what is wrong with it.
TensorFile readTensorFile(const std::string &path);

/// The shape of the tensor in the TensorProto file `path`, whatever its
/// element type. Throws std::runtime_error naming the file when it cannot
/// be parsed.
pp::runtime::Shape readTensorFileShape(const std::string &path);

/// Writes `tensor` (host) to `path` as a TensorProto named `name`, its
/// values in raw_data. Throws std::runtime_error naming the file.
void writeTensorFile(const std::string &path, const std::string &name,
                     pp_tensor *tensor);

#endif // PP_TOOLS_PP_RANK_TENSORFILES_H

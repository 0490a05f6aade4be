//===- ParameterFile.h - parameters by name, in one file --------*- C++ -*-===//
//
// `pp-run --save-params` writes every parameter of a trained model in name
// order: the line "pp-parameters 1", then per parameter a 32-bit name
// length, the name, a 32-bit rank, 64-bit dimensions and the f32 values,
// all little-endian. test/E2E compares such files from pp and LibTorch;
// readParameterFile reads them back.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PARAMETERFILE_H
#define PP_RUNTIME_PARAMETERFILE_H

#include "runtime/core/Shapes.h"

#include <map>
#include <string>
#include <vector>

namespace pp::runtime {

/// One parameter's shape and values.
struct ParameterValues {
  Shape shape;
  std::vector<float> values;
};

/// Writes `parameters` to `path`; throws std::runtime_error on failure.
void writeParameterFile(
    const std::string &path,
    const std::map<std::string, ParameterValues> &parameters);

/// Reads a file that writeParameterFile wrote. Throws std::runtime_error,
/// naming the file, the parameter and the byte offset, for anything else:
/// another header, a truncated entry, a negative dimension, names that are
/// repeated or out of order, or bytes after the last parameter.
std::map<std::string, ParameterValues>
readParameterFile(const std::string &path);

/// SHA-256 (hex) over every parameter in name order: the name, a NUL byte
/// and the raw f32 values; what pp-run prints as params_sha256.
std::string
parametersDigest(const std::map<std::string, ParameterValues> &parameters);

} // namespace pp::runtime

#endif // PP_RUNTIME_PARAMETERFILE_H

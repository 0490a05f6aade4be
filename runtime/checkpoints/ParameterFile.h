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

#include "runtime/core/OutputFile.h"
#include "runtime/core/Sha256.h"
#include "runtime/core/Shapes.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// One parameter's shape and values.
struct ParameterValues {
  Shape shape;
  std::vector<float> values;
};

/// Writes a parameter file one parameter at a time (callers add them in
/// name order), so that no more than one needs to be in memory.
class ParameterFileWriter {
public:
  /// Starts writing `path` (an OutputFile, in place at finish()); throws
  /// std::runtime_error when it cannot.
  explicit ParameterFileWriter(const std::string &path);
  /// Appends the parameter `name` of `shape` with its numElements(shape)
  /// `values`.
  void add(const std::string &name, const Shape &shape, const float *values);
  /// Makes the file durable and puts it in place; throws
  /// std::runtime_error when writing failed.
  void finish();

private:
  OutputFile file;
};

/// SHA-256 over parameters added in name order: per parameter its name, a
/// NUL byte and its raw f32 values. The hex digest is what pp-run prints
/// as params_sha256.
class ParametersDigest {
public:
  void add(const std::string &name, const float *values, int64_t count);
  /// The digest in hex; add() must not be called after it.
  std::string finish();

private:
  Sha256 sha;
};

/// Writes `parameters` to `path`; throws std::runtime_error on failure.
void writeParameterFile(
    const std::string &path,
    const std::map<std::string, ParameterValues> &parameters);

/// Reads a file that ParameterFileWriter wrote. Throws std::runtime_error,
/// naming the file, the byte offset of the parameter and what is wrong, for
/// anything else: another header, a truncated entry, a negative dimension,
/// more elements than int64_t counts, names that are repeated or out of
/// order, or bytes after the last parameter.
std::map<std::string, ParameterValues>
readParameterFile(const std::string &path);

/// The ParametersDigest of `parameters` (a map: in name order).
std::string
parametersDigest(const std::map<std::string, ParameterValues> &parameters);

} // namespace pp::runtime

#endif // PP_RUNTIME_PARAMETERFILE_H

//===- ParameterFile.cpp - parameters by name, in one file ----------------===//

#include "runtime/checkpoints/ParameterFile.h"

#include "runtime/core/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace pp::runtime {
namespace {

constexpr char kHeader[] = "pp-parameters 1\n";

/// Reads the fields of a parameter file in order, checking that each fits
/// in what is left.
class ParameterFileReader {
public:
  ParameterFileReader(const std::string &path, std::string bytes)
      : path(path), bytes(std::move(bytes)) {}

  size_t position() const { return offset; }
  bool atEnd() const { return offset == bytes.size(); }

  /// Throws the error `message` about the entry that starts at `entry`.
  [[noreturn]] void fail(const std::string &message, size_t entry) const {
    throw std::runtime_error("parameter file '" + path + "', byte " +
                             std::to_string(entry) + ": " + message);
  }

  void readHeader() {
    size_t length = sizeof(kHeader) - 1;
    if (bytes.compare(0, length, kHeader) != 0)
      fail("not a pp parameter file (it does not start with the line "
           "\"pp-parameters 1\")",
           0);
    offset = length;
  }

  /// `count` values of `T` for `what` (of the entry at `entry`).
  template <typename T>
  std::vector<T> read(size_t count, const std::string &what, size_t entry) {
    if (count > (bytes.size() - offset) / sizeof(T))
      fail("the file ends inside " + what, entry);
    const char *begin = bytes.data() + offset;
    offset += count * sizeof(T);
    std::vector<T> values(count);
    if (count != 0)
      std::memcpy(values.data(), begin, count * sizeof(T));
    return values;
  }

  /// The name and values of the parameter at position().
  std::pair<std::string, ParameterValues> readParameter() {
    size_t entry = offset;
    uint32_t length = read<uint32_t>(1, "a name length", entry).front();
    std::vector<char> nameBytes = read<char>(length, "a name", entry);
    std::string name(nameBytes.begin(), nameBytes.end());
    std::string quoted = "'" + name + "'";
    uint32_t rank = read<uint32_t>(1, "the rank of " + quoted, entry).front();
    ParameterValues parameter;
    parameter.shape = read<int64_t>(rank, "the shape of " + quoted, entry);
    std::string shape = " (shape " + formatShape(parameter.shape) + ")";
    // Counted as numElements and pp_tensor_create count, left to right.
    int64_t count = 1;
    for (int64_t dim : parameter.shape) {
      if (dim < 0)
        fail(quoted + " has the negative dimension " + std::to_string(dim),
             entry);
      if (__builtin_mul_overflow(count, dim, &count))
        fail(quoted + shape + " has more elements than int64_t can count",
             entry);
    }
    parameter.values = read<float>(static_cast<size_t>(count),
                                   "the values of " + quoted + shape, entry);
    return {std::move(name), std::move(parameter)};
  }

private:
  std::string path;
  std::string bytes;
  size_t offset = 0;
};

} // namespace

ParameterFileWriter::ParameterFileWriter(const std::string &path)
    : file(path, OutputFile::Visibility::AtCommit, "the parameter file") {
  file.write(kHeader);
}

void ParameterFileWriter::add(const std::string &name, const Shape &shape,
                              const float *values) {
  uint32_t length = static_cast<uint32_t>(name.size());
  uint32_t rank = static_cast<uint32_t>(shape.size());
  file.write(&length, sizeof(length));
  file.write(name);
  file.write(&rank, sizeof(rank));
  file.write(shape.data(), rank * sizeof(int64_t));
  file.write(values, numElements(shape) * sizeof(float));
}

void ParameterFileWriter::finish() { file.commit(); }

void ParametersDigest::add(const std::string &name, const float *values,
                           int64_t count) {
  sha.update(name.data(), name.size() + 1);
  sha.update(values, count * sizeof(float));
}

std::string ParametersDigest::finish() { return sha.hex(); }

void writeParameterFile(
    const std::string &path,
    const std::map<std::string, ParameterValues> &parameters) {
  ParameterFileWriter writer(path);
  for (const auto &[name, parameter] : parameters)
    writer.add(name, parameter.shape, parameter.values.data());
  writer.finish();
}

std::map<std::string, ParameterValues>
readParameterFile(const std::string &path) {
  ParameterFileReader reader(path,
                             readInputFile(path, "the parameter file"));
  reader.readHeader();
  std::map<std::string, ParameterValues> parameters;
  while (!reader.atEnd()) {
    size_t entry = reader.position();
    auto [name, values] = reader.readParameter();
    if (!parameters.empty() && name <= parameters.rbegin()->first)
      reader.fail("'" + name + "' follows '" + parameters.rbegin()->first +
                      "': parameters must be unique and in name order",
                  entry);
    parameters.emplace(std::move(name), std::move(values));
  }
  return parameters;
}

std::string
parametersDigest(const std::map<std::string, ParameterValues> &parameters) {
  ParametersDigest digest;
  for (const auto &[name, parameter] : parameters)
    digest.add(name, parameter.values.data(),
               static_cast<int64_t>(parameter.values.size()));
  return digest.finish();
}

} // namespace pp::runtime

//===- ParameterFile.cpp - parameters by name, in one file ----------------===//

#include "runtime/checkpoints/ParameterFile.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {

ParameterFileWriter::ParameterFileWriter(const std::string &path)
    : path(path), file(path, std::ios::binary) {
  if (!file)
    fail();
  file << "pp-parameters 1\n";
}

void ParameterFileWriter::fail() const {
  throw std::runtime_error("cannot write the parameter file '" + path +
                           "': " + std::strerror(errno));
}

void ParameterFileWriter::add(const std::string &name, const Shape &shape,
                              const float *values) {
  auto put = [&](const void *data, size_t bytes) {
    file.write(static_cast<const char *>(data),
               static_cast<std::streamsize>(bytes));
  };
  uint32_t length = static_cast<uint32_t>(name.size());
  uint32_t rank = static_cast<uint32_t>(shape.size());
  put(&length, sizeof(length));
  put(name.data(), name.size());
  put(&rank, sizeof(rank));
  put(shape.data(), rank * sizeof(int64_t));
  put(values, numElements(shape) * sizeof(float));
}

void ParameterFileWriter::finish() {
  // Writes fail late (a full disk): check after the last one is flushed.
  file.close();
  if (!file)
    fail();
}

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

std::string
parametersDigest(const std::map<std::string, ParameterValues> &parameters) {
  ParametersDigest digest;
  for (const auto &[name, parameter] : parameters)
    digest.add(name, parameter.values.data(),
               static_cast<int64_t>(parameter.values.size()));
  return digest.finish();
}

} // namespace pp::runtime

//===- ParameterFile.cpp - parameters by name, in one file ----------------===//

#include "runtime/checkpoints/ParameterFile.h"

#include "runtime/core/Sha256.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace pp::runtime {

void writeParameterFile(
    const std::string &path,
    const std::map<std::string, ParameterValues> &parameters) {
  auto fail = [&]() {
    throw std::runtime_error("cannot write the parameter file '" + path +
                             "': " + std::strerror(errno));
  };
  std::ofstream file(path, std::ios::binary);
  if (!file)
    fail();
  auto put = [&](const void *data, size_t bytes) {
    file.write(static_cast<const char *>(data),
               static_cast<std::streamsize>(bytes));
  };
  file << "pp-parameters 1\n";
  for (const auto &[name, parameter] : parameters) {
    uint32_t length = static_cast<uint32_t>(name.size());
    uint32_t rank = static_cast<uint32_t>(parameter.shape.size());
    put(&length, sizeof(length));
    put(name.data(), name.size());
    put(&rank, sizeof(rank));
    put(parameter.shape.data(), rank * sizeof(int64_t));
    put(parameter.values.data(), parameter.values.size() * sizeof(float));
  }
  // Writes fail late (a full disk): check after the last one is flushed.
  file.close();
  if (!file)
    fail();
}

std::string
parametersDigest(const std::map<std::string, ParameterValues> &parameters) {
  Sha256 digest;
  for (const auto &[name, parameter] : parameters) {
    digest.update(name.data(), name.size() + 1);
    digest.update(parameter.values.data(),
                  parameter.values.size() * sizeof(float));
  }
  return digest.hex();
}

} // namespace pp::runtime

//===- ParameterFile.cpp - parameters by name, in one file ----------------===//

#include "runtime/checkpoints/ParameterFile.h"

#include <openssl/evp.h>

#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace pp::runtime {

ParameterFileWriter::ParameterFileWriter(const std::string &path)
    : path(path), file(path, std::ios::binary) {
  if (!file)
    throw std::runtime_error("cannot write the parameter file '" + path + "'");
  file << "pp-parameters 1\n";
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
  if (!file.flush())
    throw std::runtime_error("cannot write the parameter file '" + path + "'");
}

ParametersDigest::ParametersDigest() : context(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(context, EVP_sha256(), nullptr);
}

ParametersDigest::~ParametersDigest() { EVP_MD_CTX_free(context); }

void ParametersDigest::add(const std::string &name, const float *values,
                           int64_t count) {
  EVP_DigestUpdate(context, name.data(), name.size() + 1);
  EVP_DigestUpdate(context, values, count * sizeof(float));
}

std::string ParametersDigest::finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context, digest, &length);
  std::ostringstream hex;
  for (unsigned int i = 0; i < length; ++i)
    hex << std::hex << std::setw(2) << std::setfill('0')
        << static_cast<int>(digest[i]);
  return hex.str();
}

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

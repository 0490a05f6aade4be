//===- ParameterFile.cpp - parameters by name, in one file ----------------===//

#include "runtime/checkpoints/ParameterFile.h"

#include <openssl/evp.h>

#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace pp::runtime {

void writeParameterFile(
    const std::string &path,
    const std::map<std::string, ParameterValues> &parameters) {
  std::ofstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error("cannot write the parameter file '" + path + "'");
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
  if (!file.flush())
    throw std::runtime_error("cannot write the parameter file '" + path + "'");
}

std::string
parametersDigest(const std::map<std::string, ParameterValues> &parameters) {
  EVP_MD_CTX *context = EVP_MD_CTX_new();
  EVP_DigestInit_ex(context, EVP_sha256(), nullptr);
  for (const auto &[name, parameter] : parameters) {
    EVP_DigestUpdate(context, name.data(), name.size() + 1);
    EVP_DigestUpdate(context, parameter.values.data(),
                     parameter.values.size() * sizeof(float));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context, digest, &length);
  EVP_MD_CTX_free(context);
  std::ostringstream hex;
  for (unsigned int i = 0; i < length; ++i)
    hex << std::hex << std::setw(2) << std::setfill('0')
        << static_cast<int>(digest[i]);
  return hex.str();
}

} // namespace pp::runtime

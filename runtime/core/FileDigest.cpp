//===- FileDigest.cpp - a file's recorded size and SHA-256 ----------------===//

#include "runtime/core/FileDigest.h"
#include "runtime/core/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace pp::runtime {

std::optional<FileDigest> digestOf(const InputFile &file,
                                   std::string &problem) {
  Sha256 digest;
  uint64_t bytes = file.size();
  std::vector<char> chunk(std::min<uint64_t>(bytes, 1 << 20));
  for (uint64_t done = 0; done < bytes;) {
    uint64_t size = std::min<uint64_t>(chunk.size(), bytes - done);
    errno = 0;
    if (!file.readAt(chunk.data(), size, done)) {
      problem = errno ? std::strerror(errno) : "it shrank while being read";
      return std::nullopt;
    }
    digest.update(chunk.data(), size);
    done += size;
  }
  return FileDigest{bytes, digest.hex()};
}

std::string digestProblem(const std::string &fileName, const InputFile &file,
                          const FileDigest &expected,
                          const std::string &recordedIn) {
  std::string problem;
  std::optional<FileDigest> actual = digestOf(file, problem);
  if (!actual)
    return "cannot read " + fileName + ": " + problem;
  if (actual->bytes != expected.bytes)
    return fileName + " has " + std::to_string(actual->bytes) +
           " bytes, but " + recordedIn + " records " +
           std::to_string(expected.bytes);
  if (actual->sha256 != expected.sha256)
    return fileName + " does not match the SHA-256 " + recordedIn +
           " records";
  return "";
}

} // namespace pp::runtime

//===- TemporaryFiles.h - scratch files for runtime tests -------*- C++ -*-===//

#ifndef PP_TEST_UNIT_RUNTIME_TEMPORARYFILES_H
#define PP_TEST_UNIT_RUNTIME_TEMPORARYFILES_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

/// A fresh directory /tmp/`prefix`-XXXXXX.
inline std::string freshDirectory(const std::string &prefix) {
  std::string directory = "/tmp/" + prefix + "-XXXXXX";
  EXPECT_NE(::mkdtemp(directory.data()), nullptr);
  return directory;
}

inline std::string readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

#endif // PP_TEST_UNIT_RUNTIME_TEMPORARYFILES_H

//===- FuzzSupport.cpp - what the fuzz targets share ----------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace pp::fuzz {

ScratchDirectory::ScratchDirectory() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "pp-fuzz-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    fail("cannot create a temporary directory from " + pattern);
  directory = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
}

std::string ScratchDirectory::write(const std::string &name, const void *data,
                                    size_t size) const {
  std::string path = directory + "/" + name;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(static_cast<const char *>(data),
             static_cast<std::streamsize>(size));
  if (!file.flush())
    fail("cannot write " + path);
  return path;
}

void fail(const std::string &message) {
  std::fprintf(stderr, "pp-fuzz: %s\n", message.c_str());
  std::abort();
}

} // namespace pp::fuzz

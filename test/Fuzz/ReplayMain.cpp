//===- ReplayMain.cpp - runs a fuzz target without libFuzzer --------------===//
//
// The main() of the fuzz targets in a build without libFuzzer (gcc, the
// default build), like LLVM's StandaloneFuzzTargetMain: runs
// LLVMFuzzerTestOneInput once on every file named on the command line and
// on every file directly inside a directory named there, in name order.
// Arguments that start with '-' are libFuzzer's flags and are ignored, so
// that one command line replays a corpus here and fuzzes from it under
// libFuzzer.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// The files `argument` names: itself, or a directory's regular files.
std::vector<fs::path> inputsOf(const fs::path &argument) {
  if (!fs::is_directory(argument))
    return {argument};
  std::vector<fs::path> files;
  for (const fs::directory_entry &entry : fs::directory_iterator(argument))
    if (entry.is_regular_file())
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

int main(int argc, char **argv) {
  const char *tool = argv[0];
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-')
      continue;
    if (!fs::exists(argv[i])) {
      std::cerr << tool << ": no such file or directory: " << argv[i] << "\n";
      return 1;
    }
    for (const fs::path &path : inputsOf(argv[i])) {
      std::ifstream file(path, std::ios::binary);
      if (!file) {
        std::cerr << tool << ": cannot read " << path.string() << "\n";
        return 1;
      }
      std::vector<char> bytes{std::istreambuf_iterator<char>(file), {}};
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                             bytes.size());
      ++replayed;
    }
  }
  std::cerr << tool << ": replayed " << replayed << " inputs\n";
  return 0;
}

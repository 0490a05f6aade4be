//===- ParameterFileFuzzer.cpp - fuzzes the parameter file reader ---------===//
//
// Reads each input as a parameter file (runtime/checkpoints/ParameterFile.h).
// The format is canonical (one header, names unique and in order, nothing
// after the last value), so a file that reads must write back to the same
// bytes.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "runtime/checkpoints/ParameterFile.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

using namespace pp::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const pp::fuzz::ScratchDirectory scratch;
  std::string path = scratch.write("params.bin", data, size);
  std::map<std::string, ParameterValues> parameters;
  try {
    parameters = readParameterFile(path);
  } catch (const std::runtime_error &) {
    return 0;
  }
  std::string rewritten = scratch.path() + "/rewritten.bin";
  writeParameterFile(rewritten, parameters);
  std::ifstream file(rewritten, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(file), {}};
  if (bytes.size() != size || std::memcmp(bytes.data(), data, size) != 0)
    pp::fuzz::fail("a parameter file that reads does not write back to the "
                   "same bytes");
  return 0;
}

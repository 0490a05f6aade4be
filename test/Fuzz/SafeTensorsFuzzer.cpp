//===- SafeTensorsFuzzer.cpp - fuzzes the safetensors reader --------------===//
//
// Opens each input as a safetensors file (runtime/checkpoints/SafeTensors.h),
// as --weights and a checkpoint's resume do, and reads every tensor whose
// dtype converts to f32 (the others must be refused). find() must find
// every entry.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "runtime/checkpoints/SafeTensors.h"

#include <memory>
#include <stdexcept>

using namespace pp::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const pp::fuzz::ScratchDirectory scratch;
  std::string path = scratch.write("model.safetensors", data, size);
  std::unique_ptr<SafeTensorsFile> file;
  try {
    file = std::make_unique<SafeTensorsFile>(SafeTensorsFile::open(path));
  } catch (const std::runtime_error &) {
    return 0;
  }
  for (const TensorEntry &entry : file->entries()) {
    if (file->find(entry.name) != &entry)
      pp::fuzz::fail("find('" + entry.name + "') is not its entry");
    if (!convertsToF32(entry.dtype)) {
      try {
        file->read(entry.name, nullptr);
      } catch (const std::runtime_error &) {
        continue;
      }
      pp::fuzz::fail("read converts the " + entry.dtype + " tensor '" +
                     entry.name + "'");
    }
    // open checked that the data holds numElements(shape) values, so they
    // fit in memory.
    std::vector<float> values(static_cast<size_t>(numElements(entry.shape)));
    file->read(entry.name, values.data());
  }
  return 0;
}

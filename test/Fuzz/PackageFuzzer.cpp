//===- PackageFuzzer.cpp - fuzzes the package manifest reader -------------===//
//
// Writes each input as the manifest.json of a package directory whose
// parameters.bin holds 256 floats (the seeds record its size and SHA-256),
// then does what pp-run does with a package before it loads the stage
// library: Package::load, the deadlock check of both schedules, and
// reading every parameter that comes from parameters.bin into a tensor of
// its shape.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "runtime/package/Package.h"
#include "runtime/training/Trainer.h"

#include <memory>
#include <numeric>
#include <stdexcept>

using namespace pp::runtime;

namespace {

/// The largest parameter the target allocates a tensor for: bigger ones
/// cannot fit in parameters.bin, and pp-run would only fail to allocate
/// them.
constexpr size_t kMaxParameterBytes = 1 << 20;

/// A package directory whose parameters.bin holds 256 floats 0, 1, ...
struct PackageDirectory : pp::fuzz::ScratchDirectory {
  PackageDirectory() {
    std::vector<float> values(256);
    std::iota(values.begin(), values.end(), 0.0f);
    write("parameters.bin", values.data(), values.size() * sizeof(float));
  }
};

/// Reads `parameter` the way the trainer does, when its shape is small
/// enough to allocate.
void readParameter(const Package &package, const ParameterInfo &parameter) {
  const Shape &shape = parameter.tensor.shape;
  pp_tensor *raw = nullptr;
  size_t bytes = pp_dtype_size(parameter.tensor.dtype);
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(bytes, static_cast<size_t>(dim),
                                          &bytes) ||
        bytes > kMaxParameterBytes)
      return;
  if (pp_tensor_create(parameter.tensor.dtype,
                       static_cast<int64_t>(shape.size()), shape.data(),
                       &raw) != PP_OK)
    pp::fuzz::fail(std::string("pp_tensor_create failed: ") +
                   pp_last_error());
  std::unique_ptr<pp_tensor, void (*)(pp_tensor *)> tensor(raw,
                                                           pp_tensor_destroy);
  package.readParameter(parameter, tensor.get());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const PackageDirectory directory;
  directory.write("manifest.json", data, size);
  try {
    Package package = Package::load(directory.path());
    for (ScheduleKind kind :
         {ScheduleKind::GPipe, ScheduleKind::OneForwardOneBackward,
          ScheduleKind::Interleaved1F1B, ScheduleKind::ZeroBubbleH1,
          ScheduleKind::ZeroBubbleV})
      planPipeline(package, {kind, ""}, /*microbatches=*/3);
    for (const ParameterInfo &parameter : package.parameters)
      if (parameter.fromFile)
        readParameter(package, parameter);
  } catch (const std::runtime_error &) {
  }
  return 0;
}

//===- SyntheticData.cpp - deterministic inputs and labels ----------------===//

#include "runtime/data/SyntheticData.h"

#include "runtime/core/CounterRng.h"
#include "runtime/kernels/FloatElements.h"

#include <algorithm>
#include <stdexcept>

namespace pp::runtime {

void checkSyntheticDtype(const std::string &name, pp_dtype dtype,
                         bool isLabel, int64_t indexBound) {
  bool integer = dtype == PP_DTYPE_I64 || dtype == PP_DTYPE_I32;
  bool floating = visitFloatType(dtype, [](auto) {});
  if (floating || (isLabel && dtype == PP_DTYPE_I64) ||
      (!isLabel && integer && indexBound > 0))
    return;
  throw std::runtime_error(
      std::string(isLabel ? "labels '" : "input '") + name + "' " +
      (isLabel ? "have" : "has") + " dtype " + pp_dtype_name(dtype) +
      "; pp-run's synthetic data supports float inputs (f32, bf16, f16), "
      "i64 or i32 inputs that index a table (an embedding's ids)" +
      (integer && !isLabel ? " (this one indexes none)" : "") +
      " and float or i64 labels so far");
}

void fillSynthetic(pp_tensor *tensor, uint64_t seed, const std::string &stream,
                   int64_t firstSample, int64_t bound) {
  pp_dtype dtype = pp_tensor_dtype(tensor);
  bool floating = visitFloatType(dtype, [](auto) {});
  if (!floating && dtype != PP_DTYPE_I64 && dtype != PP_DTYPE_I32)
    throw std::runtime_error("synthetic data for '" + stream +
                             "' cannot be of dtype " + pp_dtype_name(dtype) +
                             " (only f32, bf16, f16, i64 and i32)");
  if (!floating && bound < 1)
    throw std::runtime_error("synthetic integers for '" + stream +
                             "' need a bound of at least 1, got " +
                             std::to_string(bound));
  uint64_t base = mix64(seed);
  for (unsigned char c : stream)
    base = mix64(base ^ c);
  int64_t count = pp_tensor_numel(tensor);
  int64_t samples = pp_tensor_rank(tensor) ? pp_tensor_shape(tensor)[0] : 1;
  int64_t perSample = samples ? count / samples : 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t sample = firstSample + (perSample ? i / perSample : 0);
    int64_t element = perSample ? i % perSample : i;
    uint64_t bits = mix64(base ^ mix64(static_cast<uint64_t>(sample) * 2 + 1) ^
                          mix64(static_cast<uint64_t>(element) * 2));
    if (dtype == PP_DTYPE_I64) {
      static_cast<int64_t *>(pp_tensor_data(tensor))[i] =
          static_cast<int64_t>(bits % static_cast<uint64_t>(bound));
    } else if (dtype == PP_DTYPE_I32) {
      static_cast<int32_t *>(pp_tensor_data(tensor))[i] =
          static_cast<int32_t>(bits % static_cast<uint64_t>(bound));
    } else {
      // 24 random bits give every float in [-1, 1) on a 2^-23 grid (rounded
      // to nearest for bf16 and f16).
      float unit = static_cast<float>(bits >> 40) / 16777216.0f;
      visitFloatType(dtype, [&](auto element) {
        using T = decltype(element);
        static_cast<T *>(pp_tensor_data(tensor))[i] =
            storeFloat<T>(2.0f * unit - 1.0f);
      });
    }
  }
}

void fillSyntheticLabels(pp_tensor *tensor, uint64_t seed,
                         const std::string &stream, int64_t firstSample,
                         int64_t classes, int64_t ignoreIndex) {
  fillSynthetic(tensor, seed, stream, firstSample, classes);
  if (pp_tensor_dtype(tensor) != PP_DTYPE_I64 || pp_tensor_rank(tensor) < 2)
    return;
  int64_t samples = pp_tensor_shape(tensor)[0];
  int64_t perSample = samples ? pp_tensor_numel(tensor) / samples : 0;
  int64_t *labels = static_cast<int64_t *>(pp_tensor_data(tensor));
  for (int64_t s = 0; s < samples; ++s) {
    int64_t padding = (firstSample + s) % (perSample + 1);
    std::fill(labels + (s + 1) * perSample - padding,
              labels + (s + 1) * perSample, ignoreIndex);
  }
}

SyntheticMicrobatches::SyntheticMicrobatches(const Package &package,
                                             uint64_t seed, BatchLayout layout,
                                             int64_t dataRank)
    : package(package), seed(seed), layout(layout), dataRank(dataRank) {}

void SyntheticMicrobatches::fillInput(const TensorInfo &input,
                                      int64_t batchStart, int64_t microbatch,
                                      pp_tensor *tensor) {
  fillSynthetic(tensor, seed, input.name,
                layout.firstPosition(batchStart, dataRank, microbatch),
                input.indexBound);
  elements += pp_tensor_numel(tensor);
}

void SyntheticMicrobatches::fillLabels(int64_t batchStart, int64_t microbatch,
                                       pp_tensor *tensor) {
  fillSyntheticLabels(tensor, seed, package.labels.name,
                      layout.firstPosition(batchStart, dataRank, microbatch),
                      package.lossClasses, package.ignoreIndex);
  elements += pp_tensor_numel(tensor);
}

} // namespace pp::runtime

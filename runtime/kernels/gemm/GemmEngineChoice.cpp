//===- GemmEngineChoice.cpp - which engine runs a GEMM --------------------===//

#include "runtime/kernels/gemm/GemmEngineChoice.h"

#include "runtime/kernels/gemm/GemmPanels.h"
#include "runtime/kernels/gemm/WidenedGemm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

using namespace pp::runtime;

namespace {

/// A sample repeats a small GEMM up to this many multiply-adds, so that
/// the clock resolves it.
constexpr double kSampleWork = 1024.0 * 1024;
constexpr int kMaxCallsPerSample = 1000;
constexpr int kSamples = 3;

/// (dtype, transA, transB, m, n, k): what a choice depends on.
using ShapeKey = std::tuple<pp_dtype, bool, bool, int64_t, int64_t, int64_t>;

/// The process's choices (ranks may be threads of one process).
struct Choices {
  std::mutex mutex;
  std::optional<GemmEngine> forced;
  std::map<ShapeKey, GemmEngine> byShape;
  std::unique_ptr<GemmEngineCache> cache;
};

Choices &choices() {
  static Choices instance;
  return instance;
}

/// The best seconds per call of `gemm`, or infinity when it fails.
double bestSeconds(const std::function<pp_status()> &gemm, int calls) {
  using Clock = std::chrono::steady_clock;
  double best = std::numeric_limits<double>::infinity();
  for (int sample = 0; sample <= kSamples; ++sample) {
    Clock::time_point start = Clock::now();
    for (int call = 0; call < calls; ++call)
      if (gemm() != PP_OK)
        return std::numeric_limits<double>::infinity();
    std::chrono::duration<double> elapsed = Clock::now() - start;
    // Sample 0 warms up (oneDNN compiles its kernels on first use).
    if (sample > 0)
      best = std::min(best, elapsed.count() / calls);
  }
  return best;
}

/// One call of `engine` on `trial` (A and B of `dtype`, C f32); the
/// widened engine widens A and B and runs `sgemm`.
pp_status runTrial(GemmEngine engine, pp_dtype dtype, const GemmArguments &trial,
                   GemmEngine sgemm) {
  if (engine != GemmEngine::Widened)
    return runGemmEngine(engine, dtype, trial, 1.0f, 0.0f);
  WidenedGemm widened = widenGemmOperands(dtype, trial);
  return runGemmEngine(sgemm, PP_DTYPE_F32, widened.args, 1.0f, 0.0f);
}

} // namespace

std::string pp::runtime::gemmShapeKey(pp_dtype dtype,
                                      const GemmArguments &args) {
  std::string type =
      dtype == PP_DTYPE_F32 ? "" : std::string(pp_dtype_name(dtype)) + " ";
  return type + (args.transA ? "T" : "N") + (args.transB ? "T" : "N") + " " +
         std::to_string(args.m) + "x" + std::to_string(args.n) + "x" +
         std::to_string(args.k);
}

GemmMeasurement pp::runtime::measureGemmEngines(pp_dtype dtype,
                                                const GemmArguments &args,
                                                GemmEngine sgemm) {
  // Every panel is one engine call: the first, a full-sized one, stands for
  // them all (and bounds the time and memory a measurement takes).
  GemmArguments trial =
      gemmPanel(dtype, args, planGemmPanels(args.m, args.n, args.k), 0);
  std::vector<float> scratch(static_cast<size_t>(trial.m * trial.n));
  trial.c = scratch.data();
  trial.ldc = trial.n;
  double work = static_cast<double>(trial.m) * static_cast<double>(trial.n) *
                static_cast<double>(trial.k);
  int calls = static_cast<int>(std::clamp(
      std::ceil(kSampleWork / std::max(work, 1.0)), 1.0, 1.0 * kMaxCallsPerSample));
  const std::vector<GemmEngine> &engines = gemmEnginesFor(dtype);
  GemmMeasurement measurement{engines.front(), {}};
  double fastest = std::numeric_limits<double>::infinity();
  for (GemmEngine engine : engines) {
    double seconds = bestSeconds(
        [&] { return runTrial(engine, dtype, trial, sgemm); }, calls);
    measurement.gflops.emplace_back(
        engine, std::isfinite(seconds) && seconds > 0 ? 2e-9 * work / seconds : 0.0);
    if (seconds < fastest) {
      fastest = seconds;
      measurement.fastest = engine;
    }
  }
  return measurement;
}

void pp::runtime::forceGemmEngine(std::optional<GemmEngine> engine) {
  Choices &state = choices();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.forced = engine;
}

GemmEngine pp::runtime::gemmEngineFor(pp_dtype dtype,
                                      const GemmArguments &args) {
  const std::vector<GemmEngine> &engines = gemmEnginesFor(dtype);
  Choices &state = choices();
  ShapeKey key{dtype, args.transA, args.transB, args.m, args.n, args.k};
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.forced)
      return std::find(engines.begin(), engines.end(), *state.forced) !=
                     engines.end()
                 ? *state.forced
                 : GemmEngine::Widened;
    if (engines.size() == 1)
      return engines.front();
    auto known = state.byShape.find(key);
    if (known != state.byShape.end())
      return known->second;
  }
  // The widened engine runs the SGEMM chosen for the shape, measured on
  // the widened operands: choose it first, since a choice holds the lock
  // and the cache file's.
  GemmEngine sgemm = dtype == PP_DTYPE_F32
                         ? kUncachedGemmEngine
                         : gemmEngineFor(PP_DTYPE_F32,
                                         widenGemmOperands(dtype, args).args);
  std::lock_guard<std::mutex> lock(state.mutex);
  auto known = state.byShape.find(key);
  if (known != state.byShape.end())
    return known->second;
  if (!state.cache) {
    std::string machineId = gemmMachineId();
    state.cache = std::make_unique<GemmEngineCache>(
        defaultGemmEngineCachePath(machineId), machineId);
  }
  GemmEngine engine =
      state.cache->choose(gemmShapeKey(dtype, args), engines, [&] {
        return measureGemmEngines(dtype, args, sgemm);
      });
  state.byShape.emplace(key, engine);
  return engine;
}

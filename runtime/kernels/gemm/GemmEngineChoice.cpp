//===- GemmEngineChoice.cpp - which engine runs a GEMM --------------------===//

#include "runtime/kernels/gemm/GemmEngineChoice.h"

#include "runtime/kernels/gemm/GemmPanels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
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

/// (transA, transB, m, n, k): what a choice depends on.
using ShapeKey = std::tuple<bool, bool, int64_t, int64_t, int64_t>;

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

/// The best seconds per call of `engine` on `trial`, or infinity when the
/// engine fails.
double bestSeconds(GemmEngine engine, const GemmArguments &trial, int calls) {
  using Clock = std::chrono::steady_clock;
  double best = std::numeric_limits<double>::infinity();
  for (int sample = 0; sample <= kSamples; ++sample) {
    Clock::time_point start = Clock::now();
    for (int call = 0; call < calls; ++call)
      if (runGemmEngine(engine, trial, 1.0f, 0.0f) != PP_OK)
        return std::numeric_limits<double>::infinity();
    std::chrono::duration<double> elapsed = Clock::now() - start;
    // Sample 0 warms up (oneDNN compiles its kernels on first use).
    if (sample > 0)
      best = std::min(best, elapsed.count() / calls);
  }
  return best;
}

} // namespace

std::string pp::runtime::gemmShapeKey(const GemmArguments &args) {
  return std::string(args.transA ? "T" : "N") + (args.transB ? "T" : "N") +
         " " + std::to_string(args.m) + "x" + std::to_string(args.n) + "x" +
         std::to_string(args.k);
}

GemmMeasurement pp::runtime::measureGemmEngines(const GemmArguments &args) {
  // Every panel is one engine call: the first, a full-sized one, stands for
  // them all (and bounds the time and memory a measurement takes).
  GemmArguments trial =
      gemmPanel(args, planGemmPanels(args.m, args.n, args.k), 0);
  std::vector<float> scratch(static_cast<size_t>(trial.m * trial.n));
  trial.c = scratch.data();
  trial.ldc = trial.n;
  double work = static_cast<double>(trial.m) * static_cast<double>(trial.n) *
                static_cast<double>(trial.k);
  int calls = static_cast<int>(std::clamp(
      std::ceil(kSampleWork / std::max(work, 1.0)), 1.0, 1.0 * kMaxCallsPerSample));
  GemmMeasurement measurement{kGemmEngines[0], {}};
  double fastest = std::numeric_limits<double>::infinity();
  for (GemmEngine engine : kGemmEngines) {
    double seconds = bestSeconds(engine, trial, calls);
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

GemmEngine pp::runtime::gemmEngineFor(const GemmArguments &args) {
  Choices &state = choices();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.forced)
    return *state.forced;
  ShapeKey key{args.transA, args.transB, args.m, args.n, args.k};
  auto known = state.byShape.find(key);
  if (known != state.byShape.end())
    return known->second;
  if (!state.cache) {
    std::string machineId = gemmMachineId();
    state.cache = std::make_unique<GemmEngineCache>(
        defaultGemmEngineCachePath(machineId), machineId);
  }
  GemmEngine engine = state.cache->choose(
      gemmShapeKey(args), [&] { return measureGemmEngines(args); });
  state.byShape.emplace(key, engine);
  return engine;
}

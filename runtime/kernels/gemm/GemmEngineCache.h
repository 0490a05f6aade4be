//===- GemmEngineCache.h - measured GEMM engine choices on disk -*- C++ -*-===//
//
// The file that remembers, per machine, which engine was fastest for each
// GEMM shape, so that later processes reuse the choice instead of measuring
// again and so that all processes of a job use one engine per shape (their
// results are then bit for bit the same at any stage count). Processes that
// start together take turns under flock(2) on PATH.lock: one measures a
// shape, the others read what it wrote.
//
// The file (JSON):
//   {"format": 1, "machine": "<CPU model | CPU flags | library versions>",
//    "shapes": {"NT 64x1024x1024": {"engine": "onednn",
//               "gflops": {"onednn": 231.2, "openblas": 118.5, ...}},
//               "bf16 NT 64x1024x1024": {"engine": "widen",
//               "gflops": {"widen": 80.3, "onednn": 30.1}}}}
// (f32 shapes unprefixed, other element types prefixed with their name).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_GEMM_GEMMENGINECACHE_H
#define PP_RUNTIME_GEMM_GEMMENGINECACHE_H

#include "runtime/kernels/gemm/GemmEngines.h"

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pp::runtime {

/// What measuring the engines on one shape found.
struct GemmMeasurement {
  GemmEngine fastest;
  /// Each engine's best rate in GFLOP/s (0 when it failed).
  std::vector<std::pair<GemmEngine, double>> gflops;
};

/// This machine: CPU model, CPU feature flags and the engines' versions.
std::string gemmMachineId();

/// The cache file of `machineId`: $PP_GEMM_CACHE if set, else
/// gemm-engines-<hash of machineId>.json in $XDG_CACHE_HOME/pp or else in
/// ~/.cache/pp; empty when none of these variables is set.
std::string defaultGemmEngineCachePath(const std::string &machineId);

/// The f32 engine used when the cache cannot be read and written (of
/// other element types, their first engine, gemmEnginesFor): with no
/// measurement, every process of a job still picks the same one.
inline constexpr GemmEngine kUncachedGemmEngine = GemmEngine::OneDnn;

class GemmEngineCache {
public:
  /// A cache in the file `path`; `lockWait` bounds how long choose waits
  /// for another process's lock.
  GemmEngineCache(std::string path, std::string machineId,
                  std::chrono::milliseconds lockWait = std::chrono::minutes(2))
      : path(std::move(path)), machineId(std::move(machineId)),
        lockWait(lockWait) {}

  /// The engine for `shape`, one of `candidates` (non-empty): read from
  /// the file, else found by `measure` and added to the file, under an
  /// exclusive lock. A corrupt file, one of another machine or an entry
  /// naming no candidate gets a warning on stderr and is rewritten; a file
  /// that cannot be locked or written gets a warning and the first
  /// candidate. Each warning is given once per cache. Throws
  /// std::runtime_error when another process holds the lock past
  /// `lockWait` (a stopped or hung process).
  GemmEngine choose(const std::string &shape,
                    const std::vector<GemmEngine> &candidates,
                    const std::function<GemmMeasurement()> &measure);

private:
  /// Prints "pp: warning: the GEMM engine cache PATH PROBLEM; CONSEQUENCE"
  /// unless this cache gave that warning already.
  void warn(const std::string &problem, const std::string &consequence);

  std::string path, machineId;
  std::chrono::milliseconds lockWait;
  std::set<std::string> warned;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_GEMM_GEMMENGINECACHE_H

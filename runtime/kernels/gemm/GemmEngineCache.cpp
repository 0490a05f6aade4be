//===- GemmEngineCache.cpp - measured GEMM engine choices on disk ---------===//

#include "runtime/kernels/gemm/GemmEngineCache.h"

#include "runtime/core/OutputFile.h"
#include "runtime/core/TrustedFiles.h"
#include "runtime/core/FileDescriptor.h"
#include "runtime/core/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <sys/file.h>
#include <thread>

using namespace pp::runtime;
using nlohmann::json;

namespace {

constexpr int kFormat = 1;

/// The value of the first /proc/cpuinfo line that starts with `key`.
std::string cpuinfoField(const std::string &key) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.compare(0, key.size(), key) == 0) {
      size_t colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(colon + 2);
    }
  return "unknown";
}

/// A non-empty environment variable, or null.
const char *environmentValue(const char *name) {
  const char *value = std::getenv(name);
  return value && *value ? value : nullptr;
}

json emptyDocument(const std::string &machineId) {
  return {{"format", kFormat}, {"machine", machineId}, {"shapes", json::object()}};
}

/// The document at `path`; an empty one and the reason when the file is
/// unusable ("" when it does not exist yet).
std::pair<json, std::string> readDocument(const std::string &path,
                                          const std::string &machineId) {
  std::string problem;
  std::optional<std::string> text =
      readTrustedFile(path, "the GEMM engine cache", problem);
  if (!text)
    return {emptyDocument(machineId),
            problem.empty() ? "" : "cannot be used: " + problem};
  json document = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded())
    return {emptyDocument(machineId), "is not valid JSON"};
  if (!document.is_object() || document.value("format", json()) != kFormat ||
      !document.value("shapes", json()).is_object())
    return {emptyDocument(machineId),
            "lacks \"format\": " + std::to_string(kFormat) +
                " or a \"shapes\" object"};
  if (document.value("machine", json()) != machineId)
    return {emptyDocument(machineId), "was measured on another machine or "
                                      "with other library versions"};
  return {std::move(document), ""};
}

} // namespace

std::string pp::runtime::gemmMachineId() {
  return cpuinfoField("model name") + " | " + cpuinfoField("flags") + " | " +
         gemmEngineVersions();
}

std::string pp::runtime::defaultGemmEngineCachePath(const std::string &machineId) {
  if (const char *path = environmentValue("PP_GEMM_CACHE"))
    return path;
  std::filesystem::path folder;
  if (const char *cache = environmentValue("XDG_CACHE_HOME"))
    folder = cache;
  else if (const char *home = environmentValue("HOME"))
    folder = std::filesystem::path(home) / ".cache";
  else
    return "";
  Sha256 hash;
  hash.update(machineId.data(), machineId.size());
  return (folder / "pp" / ("gemm-engines-" + hash.hex().substr(0, 16) + ".json"))
      .string();
}

void GemmEngineCache::warn(const std::string &problem,
                           const std::string &consequence) {
  if (warned.insert(problem).second)
    std::cerr << "pp: warning: the GEMM engine cache '" << path << "' "
              << problem << "; " << consequence << "\n";
}

GemmEngine GemmEngineCache::choose(
    const std::string &shape, const std::vector<GemmEngine> &candidates,
    const std::function<GemmMeasurement()> &measure) {
  GemmEngine fallback = candidates.front();
  std::string uncached = std::string("every GEMM uses ") +
                         gemmEngineName(GemmEngine::OneDnn) +
                         " (bf16 and f16 GEMMs widened) unmeasured; set "
                         "PP_GEMM_CACHE to a writable file";
  if (path.empty()) {
    warn("has no location (neither PP_GEMM_CACHE, XDG_CACHE_HOME nor HOME "
         "is set)",
         uncached);
    return fallback;
  }
  std::error_code error;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty())
    std::filesystem::create_directories(parent, error);
  if (error) {
    warn("cannot get its folder: " + error.message(), uncached);
    return fallback;
  }
  std::string lockPath = path + ".lock";
  FileDescriptor lock(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  auto deadline = std::chrono::steady_clock::now() + lockWait;
  int locked = lock.get() < 0 ? -1 : 0;
  while (locked == 0 && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      locked = -1;
    else if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(
          "another process has held the GEMM engine cache lock '" + lockPath +
          "' for " + std::to_string(lockWait.count() / 1000.0) +
          " s (a stopped or hung pp process?); end it, or set "
          "PP_GEMM_CACHE to another file for every rank of the job");
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (locked != 0) {
    warn("cannot be locked through '" + lockPath + "': " + std::strerror(errno),
         uncached);
    return fallback;
  }
  auto [document, problem] = readDocument(path, machineId);
  if (!problem.empty())
    warn(problem, "measuring again and rewriting it");
  json &shapes = document["shapes"];
  if (shapes.contains(shape)) {
    const json &entry = shapes[shape];
    std::optional<GemmEngine> engine =
        entry.is_object() ? parseGemmEngine(entry.value("engine", "")) : std::nullopt;
    if (engine && std::find(candidates.begin(), candidates.end(), *engine) !=
                      candidates.end())
      return *engine;
    warn("names no known engine for " + shape, "measuring it again");
  }
  GemmMeasurement measured = measure();
  json &entry = shapes[shape];
  entry["engine"] = gemmEngineName(measured.fastest);
  for (auto [engine, gflops] : measured.gflops)
    entry["gflops"][gemmEngineName(engine)] = gflops;
  std::string text = document.dump(1) + "\n";
  try {
    writeOutputFile(path, text, "the GEMM engine cache", 0600);
  } catch (const std::exception &failure) {
    warn(std::string("cannot be written: ") + failure.what(), uncached);
    return fallback;
  }
  return measured.fastest;
}

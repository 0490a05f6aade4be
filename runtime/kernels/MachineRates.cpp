//===- MachineRates.cpp - this machine's compute, memory and link rates ---===//

#include "runtime/kernels/MachineRates.h"

#include "runtime/core/OutputFile.h"
#include "runtime/core/TrustedFiles.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/kernels/Frame.h"
#include "runtime/kernels/gemm/GemmEngineCache.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <link.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

using namespace pp::runtime;
using nlohmann::json;

namespace {

constexpr int kFormat = 1;

/// A kernel's timing: at least this many calls after the warm-up, and more
/// until this much time has passed.
constexpr int kMinCalls = 3;
constexpr double kMinSeconds = 0.02;

/// GEMMs of a transformer layer (d_model 512, 256 tokens): the fused QKV
/// projection, the MLP's up and down projections, as m x n x k.
constexpr int64_t kGemmShapes[][3] = {
    {256, 1536, 512}, {256, 2048, 512}, {256, 512, 2048}};

/// Elements of each operand of the timed add, and bytes of the timed copy:
/// 16 MiB, more than a core's L2 cache.
constexpr int64_t kStreamFloats = int64_t(1) << 22;

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

/// A host f32 tensor of `shape` holding small values.
Tensor filledTensor(std::vector<int64_t> shape) {
  pp_tensor *tensor = nullptr;
  if (pp_tensor_create(PP_DTYPE_F32, static_cast<int64_t>(shape.size()),
                       shape.data(), &tensor) != PP_OK)
    throw std::runtime_error("cannot allocate a tensor to time the kernels: " +
                             std::string(pp_last_error()));
  float *data = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < pp_tensor_numel(tensor); ++i)
    data[i] = static_cast<float>(i % 7) * 0.25f;
  return Tensor(tensor);
}

/// Calls a kernel on a fresh frame and frees its result; throws its error.
template <typename Kernel> void callKernel(const char *name, Kernel &&kernel) {
  pp_frame frame;
  Tensor result(kernel(&frame));
  if (!result || !frame.error.empty())
    throw std::runtime_error(std::string("timing ") + name + " failed: " +
                             frame.error);
}

/// The best seconds of one call of `call` after a warm-up call.
template <typename Call> double bestSeconds(Call &&call) {
  using Clock = std::chrono::steady_clock;
  call();
  double best = INFINITY;
  Clock::time_point begin = Clock::now();
  for (int calls = 0;
       calls < kMinCalls ||
       std::chrono::duration<double>(Clock::now() - begin).count() < kMinSeconds;
       ++calls) {
    Clock::time_point start = Clock::now();
    call();
    best = std::min(
        best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

double gemmFlopsPerSecond() {
  double flops = 0, seconds = 0;
  for (const int64_t *shape : kGemmShapes) {
    int64_t m = shape[0], n = shape[1], k = shape[2];
    Tensor lhs = filledTensor({m, k}), rhs = filledTensor({k, n});
    seconds += bestSeconds([&] {
      callKernel("matmul", [&](pp_frame *frame) {
        return pp_cpu_matmul(frame, lhs.get(), rhs.get(), 0, 0);
      });
    });
    flops += 2.0 * static_cast<double>(m * n * k);
  }
  return flops / seconds;
}

double elementwiseBytesPerSecond() {
  Tensor lhs = filledTensor({kStreamFloats}), rhs = filledTensor({kStreamFloats});
  double seconds = bestSeconds([&] {
    callKernel("add", [&](pp_frame *frame) {
      return pp_cpu_add(frame, lhs.get(), rhs.get());
    });
  });
  // Two operands read and a result written, as the cost model counts.
  return 3.0 * sizeof(float) * static_cast<double>(kStreamFloats) / seconds;
}

double copyBytesPerSecond() {
  size_t bytes = kStreamFloats * sizeof(float);
  std::vector<char> from(bytes, 1), to(bytes, 0);
  double seconds = bestSeconds([&] {
    std::memcpy(to.data(), from.data(), bytes);
    // Keeps the copy: its result is read.
    if (to[bytes / 2] != from[bytes / 2])
      throw std::runtime_error("a timed memcpy did not copy");
  });
  return static_cast<double>(bytes) / seconds;
}

/// Finds the GNU build ID of the loaded object that holds `address`.
struct BuildIdSearch {
  ElfW(Addr) address;
  std::string hex;
};

int findBuildId(dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  bool holdsAddress = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    ElfW(Addr) start = info->dlpi_addr + segment.p_vaddr;
    holdsAddress |= segment.p_type == PT_LOAD && search->address >= start &&
                    search->address < start + segment.p_memsz;
  }
  if (!holdsAddress)
    return 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE)
      continue;
    size_t align = std::max<size_t>(segment.p_align, 4);
    auto padded = [&](size_t size) { return (size + align - 1) / align * align; };
    const char *note = reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
    const char *end = note + segment.p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      const auto *header = reinterpret_cast<const ElfW(Nhdr) *>(note);
      const char *name = note + sizeof(ElfW(Nhdr));
      const auto *id = reinterpret_cast<const unsigned char *>(
          name + padded(header->n_namesz));
      if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        static const char digits[] = "0123456789abcdef";
        for (ElfW(Word) byte = 0; byte < header->n_descsz; ++byte)
          search->hex += {digits[id[byte] >> 4], digits[id[byte] & 15]};
        return 1;
      }
      note = reinterpret_cast<const char *>(id) + padded(header->n_descsz);
    }
  }
  return 1;
}

/// The build ID of the library holding the kernels (libPPRuntime): it
/// changes with every change to their code; "unknown" for a build the
/// linker gave none.
std::string runtimeBuildId() {
  BuildIdSearch search{reinterpret_cast<ElfW(Addr)>(&findBuildId), ""};
  dl_iterate_phdr(findBuildId, &search);
  return search.hex.empty() ? "unknown" : search.hex;
}

void warn(const std::string &path, const std::string &problem,
          const std::string &consequence) {
  std::cerr << "pp: warning: the machine rate cache '" << path << "' "
            << problem << "; " << consequence << "\n";
}

/// The cache's entries; none and the reason when the file is unusable (""
/// when it does not exist yet).
std::pair<json, std::string> readEntries(const std::string &path) {
  std::string problem;
  std::optional<std::string> text =
      readTrustedFile(path, "the machine rate cache", problem);
  if (!text)
    return {json::array(), problem.empty() ? "" : "cannot be used: " + problem};
  json document = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded())
    return {json::array(), "is not valid JSON"};
  if (!document.is_object() || document.value("format", json()) != kFormat ||
      !document.value("entries", json()).is_array())
    return {json::array(), "lacks \"format\": " + std::to_string(kFormat) +
                               " or an \"entries\" array"};
  return {document["entries"], ""};
}

bool sameKey(const json &entry, const json &key) {
  for (const auto &[field, value] : key.items())
    if (entry.value(field, json()) != value)
      return false;
  return true;
}

/// The entry's rates when all three are positive numbers.
std::optional<MachineRates> ratesOf(const json &entry) {
  MachineRates rates;
  std::pair<const char *, double *> fields[] = {
      {"flop_rate", &rates.flopsPerSecond},
      {"byte_rate", &rates.bytesPerSecond},
      {"link_rate", &rates.linkBytesPerSecond}};
  for (auto [field, value] : fields) {
    json rate = entry.value(field, json());
    if (!rate.is_number() || !(rate.get<double>() > 0) ||
        !std::isfinite(rate.get<double>()))
      return std::nullopt;
    *value = rate.get<double>();
  }
  return rates;
}

} // namespace

MachineRates pp::runtime::measureMachineRates(int threads) {
  int previous = threadCount();
  if (pp_set_threads(threads) != PP_OK)
    throw std::runtime_error(pp_last_error());
  struct RestoreThreads {
    int threads;
    ~RestoreThreads() { pp_set_threads(threads); }
  } restore{previous};
  MachineRates rates;
  rates.flopsPerSecond = gemmFlopsPerSecond();
  rates.bytesPerSecond = elementwiseBytesPerSecond();
  rates.linkBytesPerSecond = copyBytesPerSecond();
  return rates;
}

LoadedMachineRates
pp::runtime::loadOrMeasureMachineRates(const std::string &cacheDir,
                                       int threads) {
  std::filesystem::path folder(cacheDir);
  std::string path = (folder / "machine-rates.json").string();
  json key = {{"machine", gemmMachineId()},
              {"threads", std::max(threads, 1)},
              {"runtime", runtimeBuildId()}};
  auto [entries, problem] = readEntries(path);
  if (!problem.empty())
    warn(path, problem, "measuring the rates again and rewriting it");
  for (const json &entry : entries)
    if (entry.is_object() && sameKey(entry, key))
      if (std::optional<MachineRates> rates = ratesOf(entry))
        return {*rates, false};

  MachineRates rates = measureMachineRates(threads);
  json entry = key;
  entry["flop_rate"] = rates.flopsPerSecond;
  entry["byte_rate"] = rates.bytesPerSecond;
  entry["link_rate"] = rates.linkBytesPerSecond;
  json kept = json::array();
  for (json &old : entries)
    if (!old.is_object() || !sameKey(old, key))
      kept.push_back(std::move(old));
  kept.push_back(std::move(entry));
  std::string text =
      json{{"format", kFormat}, {"entries", std::move(kept)}}.dump(2) + "\n";
  try {
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error)
      throw std::runtime_error("cannot create its folder: " + error.message());
    writeOutputFile(path, text, "the machine rate cache", 0600);
  } catch (const std::exception &error) {
    warn(path, std::string("cannot be written (") + error.what() + ")",
         "the next run measures the rates again");
  }
  return {rates, true};
}

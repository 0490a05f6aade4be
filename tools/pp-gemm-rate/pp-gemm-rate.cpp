//===- pp-gemm-rate.cpp - GEMM rate of each engine on this machine --------===//
//
// Times the host GEMM (pp_gemm_f32, or the bf16 GEMM with --dtype bf16)
// with each engine forced on the given shapes and prints one JSON line per
// engine and shape (docs/development.md, Benchmarks):
//
//   {"engine":"onednn","dtype":"f32","trans":"NN","shape":"1024x1024x1024",
//    "threads":1,"gflops":231.4,"seconds":0.00928}
//
// The machine's best GEMM rate of a type for a shape is the largest
// "gflops". In bf16 a library without a bf16 kernel runs its SGEMM on the
// operands widened to f32: its engine prints as "widen/openblas".
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/FloatElements.h"
#include "runtime/kernels/Matmul.h"
#include "runtime/kernels/gemm/GemmEngineChoice.h"
#include "runtime/pp_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

// Plain argument parsing: libLLVM's command-line registry already holds a
// --threads of its own.

namespace {

const char *const kUsage =
    "usage: pp-gemm-rate [--shape MxNxK]... [--trans NN|NT|TN|TT] "
    "[--dtype f32|bf16] [--threads N] [--engine NAME]... [--min-seconds S]\n"
    "  --shape MxNxK    C[M x N] = op(A)[M x K] op(B)[K x N] (repeatable; "
    "default 1024x1024x1024)\n"
    "  --trans XY       transposes of A and B (default NN)\n"
    "  --dtype TYPE     element type of A, B and C, f32 or bf16 (f32 "
    "accumulation; default f32)\n"
    "  --threads N      threads the GEMM runs on (default 1)\n"
    "  --engine NAME    onednn, openblas, blis or pp (repeatable; default all "
    "four)\n"
    "  --min-seconds S  time each engine and shape at least this long "
    "(default 0.2)\n"
    "Prints one JSON line per engine and shape.\n";

struct Options {
  std::vector<std::string> shapes, engines;
  std::string transposes = "NN", dtype = "f32";
  int threads = 1;
  double minSeconds = 0.2;
};

struct Shape {
  int64_t m, n, k;
};

bool parseShape(const std::string &text, Shape &shape) {
  char end = 0;
  long long m, n, k;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &end) != 3 ||
      m < 1 || n < 1 || k < 1)
    return false;
  shape = {m, n, k};
  return true;
}

/// The best seconds of one GEMM over elements T on `shape` after a warm-up
/// call, repeating for at least --min-seconds and 3 calls; negative on
/// failure.
template <typename T>
double bestSeconds(const Shape &shape, bool transA, bool transB,
                   double minSeconds) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> values(-1.0f, 1.0f);
  std::vector<T> a(shape.m * shape.k), b(shape.k * shape.n),
      c(shape.m * shape.n);
  for (std::vector<T> *matrix : {&a, &b})
    for (T &value : *matrix)
      value = pp::runtime::storeFloat<T>(values(rng));
  auto multiply = [&] {
    return pp::runtime::hostGemm(
        pp::runtime::floatDtype<T>(), transA, transB, shape.m, shape.n,
        shape.k, a.data(), transA ? shape.m : shape.k, b.data(),
        transB ? shape.k : shape.n, c.data(), shape.n);
  };
  if (multiply() != PP_OK)
    return -1;
  using Clock = std::chrono::steady_clock;
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int call = 0; call < 3 || total < minSeconds; ++call) {
    Clock::time_point start = Clock::now();
    if (multiply() != PP_OK)
      return -1;
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, seconds);
    total += seconds;
  }
  return best;
}

/// `engine` as the bf16 GEMM runs it when forced: "onednn" where oneDNN
/// has a bf16 kernel on this CPU, else "widen/NAME" (NAME's SGEMM on the
/// operands widened to f32).
std::string engineLabel(const std::string &engine, bool bf16) {
  std::optional<pp::runtime::GemmEngine> library =
      pp::runtime::parseGemmEngine(engine);
  if (!bf16 || !library)
    return engine;
  const std::vector<pp::runtime::GemmEngine> &engines =
      pp::runtime::gemmEnginesFor(PP_DTYPE_BF16);
  bool native =
      std::find(engines.begin(), engines.end(), *library) != engines.end();
  return native ? engine : "widen/" + engine;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "pp-gemm-rate: error: %s\n", message.c_str());
  return 1;
}

/// Reads argv into `options`; an error message, or "" on success.
std::string parseArguments(int argc, char **argv, Options &options) {
  for (int index = 1; index < argc; ++index) {
    std::string flag = argv[index], value;
    size_t equals = flag.find('=');
    if (equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag.resize(equals);
    } else if (index + 1 < argc) {
      value = argv[++index];
    } else {
      return flag + " needs a value; see --help";
    }
    char *end = nullptr;
    if (flag == "--shape")
      options.shapes.push_back(value);
    else if (flag == "--engine")
      options.engines.push_back(value);
    else if (flag == "--trans")
      options.transposes = value;
    else if (flag == "--dtype")
      options.dtype = value;
    else if (flag == "--threads")
      options.threads = static_cast<int>(std::strtol(value.c_str(), &end, 10));
    else if (flag == "--min-seconds")
      options.minSeconds = std::strtod(value.c_str(), &end);
    else
      return "unknown option '" + flag + "'; see --help";
    if (end && (*end || value.empty()))
      return flag + " '" + value + "' is not a number";
  }
  return "";
}

} // namespace

int main(int argc, char **argv) {
  for (int index = 1; index < argc; ++index)
    if (std::string(argv[index]) == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  Options options;
  if (std::string problem = parseArguments(argc, argv, options);
      !problem.empty())
    return fail(problem);
  std::vector<Shape> parsed;
  for (const std::string &text : options.shapes)
    if (!parseShape(text, parsed.emplace_back()))
      return fail("--shape '" + text +
                  "' is not MxNxK with positive sizes, e.g. 64x1024x1024");
  if (parsed.empty())
    parsed.push_back({1024, 1024, 1024});
  const std::string &transposes = options.transposes;
  if (transposes.size() != 2 ||
      transposes.find_first_not_of("NT") != std::string::npos)
    return fail("--trans '" + transposes + "' is not NN, NT, TN or TT");
  if (options.dtype != "f32" && options.dtype != "bf16")
    return fail("--dtype '" + options.dtype + "' is not f32 or bf16");
  bool bf16 = options.dtype == "bf16";
  if (options.threads < 1)
    return fail("--threads " + std::to_string(options.threads) +
                " must be at least 1");
  if (options.engines.empty())
    options.engines = {"onednn", "openblas", "blis", "pp"};
  if (pp_set_threads(options.threads) != PP_OK)
    return fail(pp_last_error());
  for (const std::string &engine : options.engines) {
    if (pp_set_gemm_engine(engine.c_str()) != PP_OK)
      return fail(pp_last_error());
    for (const Shape &shape : parsed) {
      bool transA = transposes[0] == 'T', transB = transposes[1] == 'T';
      double seconds =
          bf16 ? bestSeconds<pp::runtime::BFloat16>(shape, transA, transB,
                                                    options.minSeconds)
               : bestSeconds<float>(shape, transA, transB, options.minSeconds);
      if (seconds < 0)
        return fail(pp_last_error());
      double flops = 2.0 * shape.m * shape.n * shape.k;
      std::printf("{\"engine\":\"%s\",\"dtype\":\"%s\",\"trans\":\"%s\","
                  "\"shape\":\"%lldx%lldx%lld\",\"threads\":%d,"
                  "\"gflops\":%.1f,\"seconds\":%.6g}\n",
                  engineLabel(engine, bf16).c_str(), options.dtype.c_str(),
                  transposes.c_str(),
                  static_cast<long long>(shape.m),
                  static_cast<long long>(shape.n),
                  static_cast<long long>(shape.k), options.threads,
                  flops / seconds * 1e-9, seconds);
    }
  }
  return 0;
}

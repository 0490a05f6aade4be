//===- pp-gemm-rate.cpp - SGEMM rate of each engine on this machine -------===//
//
// Times pp_gemm_f32 with each engine forced on the given shapes and prints
// one JSON line per engine and shape (docs/development.md, Benchmarks):
//
//   {"engine":"onednn","trans":"NN","shape":"1024x1024x1024","threads":1,
//    "gflops":231.4,"seconds":0.00928}
//
// The machine's best SGEMM rate for a shape is the largest "gflops".
//
//===----------------------------------------------------------------------===//

#include "runtime/pp_runtime.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace llvm;

namespace {

cl::OptionCategory rateCategory("pp-gemm-rate options");

cl::list<std::string> shapes(
    "shape", cl::desc("MxNxK of C[M x N] += op(A)[M x K] op(B)[K x N] "
                      "(repeatable; default 1024x1024x1024)"),
    cl::cat(rateCategory));
cl::opt<std::string>
    transposes("trans", cl::init("NN"),
               cl::desc("Transposes of A and B: NN (default), NT, TN or TT"),
               cl::cat(rateCategory));
cl::opt<int> threads("threads", cl::init(1),
                     cl::desc("Threads pp_gemm_f32 runs on (default 1)"),
                     cl::cat(rateCategory));
cl::list<std::string>
    engines("engine",
            cl::desc("Engines to time (repeatable; default onednn, openblas "
                     "and blis)"),
            cl::cat(rateCategory));
cl::opt<double> minSeconds(
    "min-seconds", cl::init(0.2),
    cl::desc("Time each engine and shape at least this long (default 0.2)"),
    cl::cat(rateCategory));

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

/// The best seconds of one pp_gemm_f32 on `shape` after a warm-up call,
/// repeating for at least --min-seconds and 3 calls; negative on failure.
double bestSeconds(const Shape &shape, bool transA, bool transB) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> values(-1.0f, 1.0f);
  std::vector<float> a(shape.m * shape.k), b(shape.k * shape.n),
      c(shape.m * shape.n);
  for (std::vector<float> *matrix : {&a, &b})
    for (float &value : *matrix)
      value = values(rng);
  auto multiply = [&] {
    return pp_gemm_f32(transA, transB, shape.m, shape.n, shape.k, 1.0f,
                       a.data(), transA ? shape.m : shape.k, b.data(),
                       transB ? shape.k : shape.n, 0.0f, c.data(), shape.n);
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

int fail(const Twine &message) {
  WithColor::error(errs(), "pp-gemm-rate") << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(rateCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pp-gemm-rate: single-precision GEMM rate of each engine, one JSON "
      "line per engine and shape\n\n"
      "  pp-gemm-rate [--shape MxNxK]... [--trans NN|NT|TN|TT] "
      "[--threads N] [--engine NAME]...\n");
  std::vector<Shape> parsed;
  for (const std::string &text : shapes)
    if (!parseShape(text, parsed.emplace_back()))
      return fail("--shape '" + text +
                  "' is not MxNxK with positive sizes, e.g. 64x1024x1024");
  if (parsed.empty())
    parsed.push_back({1024, 1024, 1024});
  if (transposes.size() != 2 ||
      transposes.find_first_not_of("NT") != std::string::npos)
    return fail("--trans '" + transposes + "' is not NN, NT, TN or TT");
  if (threads < 1)
    return fail("--threads " + Twine(threads) + " must be at least 1");
  std::vector<std::string> names(engines.begin(), engines.end());
  if (names.empty())
    names = {"onednn", "openblas", "blis"};
  pp_set_threads(threads);
  for (const std::string &engine : names) {
    if (pp_set_gemm_engine(engine.c_str()) != PP_OK)
      return fail(pp_last_error());
    for (const Shape &shape : parsed) {
      double seconds =
          bestSeconds(shape, transposes[0] == 'T', transposes[1] == 'T');
      if (seconds < 0)
        return fail(pp_last_error());
      double flops = 2.0 * shape.m * shape.n * shape.k;
      outs() << "{\"engine\":\"" << engine << "\",\"trans\":\"" << transposes
             << "\",\"shape\":\"" << shape.m << "x" << shape.n << "x"
             << shape.k << "\",\"threads\":" << threads << ",\"gflops\":"
             << format("%.1f", flops / seconds * 1e-9)
             << ",\"seconds\":" << format("%.6g", seconds) << "}\n";
    }
  }
  return 0;
}

//===- CudaStateKernelsCheck.cpp - CUDA state kernels against the CPU's ---===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaStateKernelsCheck on a GPU machine. Runs
// cudaStateKernels and cpuStateKernels on the same inputs: the gradient
// sums, the scale, the loss sum and the rounding of gradients to bf16 and
// back (a bf16 data-parallel reduction's) must give the CPU's bits; the sums of
// squares agree in double to 1e-12 relative (the GPU adds in another
// order); the optimizer step (SGD with and without momentum, AdamW with
// weight decay, over segments at different steps, over several steps) must
// give the CPU's bits in the values and every state buffer (the CUDA file
// is compiled with --fmad=false and the bias corrections come from the
// host, as in the CPU loop). Prints PASS or FAIL per check and exits
// non-zero on a failure.
//
//===----------------------------------------------------------------------===//

#include "DeviceCheck.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaStateKernels.h"
#include "runtime/device/Buffer.h"
#include "runtime/training/StateKernels.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

/// `count` values `scale * sin(1.3 i + phase)`: signs, magnitudes and
/// roundings of every kind.
std::vector<float> wave(int64_t count, float scale, float phase) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = scale * std::sin(1.3f * static_cast<float>(i) + phase);
  return values;
}

/// Host values and their copy in GPU memory.
class Mirrored {
public:
  Mirrored(Queue &queue, std::vector<float> values)
      : queue(queue), host(std::move(values)),
        device(Buffer::allocate(queue, host.size() * sizeof(float))) {
    queue.copy(device.data(), host.data(), host.size() * sizeof(float));
  }

  float *onHost() { return host.data(); }
  float *onDevice() { return static_cast<float *>(device.data()); }

  /// "" when the GPU's copy holds the host's bits; else the first element
  /// that differs.
  std::string differences(const std::string &what) {
    std::vector<float> back(host.size());
    queue.copy(back.data(), device.data(), back.size() * sizeof(float));
    queue.synchronize();
    for (size_t i = 0; i < back.size(); ++i)
      if (std::memcmp(&back[i], &host[i], sizeof(float)) != 0) {
        char text[160];
        std::snprintf(text, sizeof(text), "%s[%zu]: gpu %.9g, cpu %.9g",
                      what.c_str(), i, back[i], host[i]);
        return text;
      }
    return "";
  }

private:
  Queue &queue;
  std::vector<float> host;
  Buffer device;
};

/// Steps `options`' optimizer `steps` times over three segments (the
/// first decays, the second does not, the third starts two steps later)
/// on both devices and compares values and state after each step.
std::string compareSteps(Queue &gpu, Queue &cpu,
                         const OptimizerOptions &options, int steps) {
  const int64_t n = 50021;
  Mirrored values(gpu, wave(n, 0.5f, 0.3f));
  std::vector<Mirrored> state;
  for (size_t b = 0; b < optimizerBufferNames(options).size(); ++b)
    state.emplace_back(gpu, std::vector<float>(n, 0.0f));
  std::vector<float *> cpuState, gpuState;
  for (Mirrored &buffer : state) {
    cpuState.push_back(buffer.onHost());
    gpuState.push_back(buffer.onDevice());
  }
  for (int step = 1; step <= steps; ++step) {
    Mirrored gradients(gpu, wave(n, 0.01f * static_cast<float>(step),
                                 0.7f * static_cast<float>(step)));
    std::vector<SegmentStep> segments = {
        {0, 20000, options.weightDecay, step},
        {20000, 40000, 0.0f, step},
    };
    if (step > 2)
      segments.push_back({40000, n, options.weightDecay, step - 2});
    float learningRate = 0.01f / static_cast<float>(step);
    cpuStateKernels().stepOptimizer(cpu, options, segments, values.onHost(),
                                    gradients.onHost(), cpuState,
                                    learningRate);
    cudaStateKernels().stepOptimizer(gpu, options, segments,
                                     values.onDevice(), gradients.onDevice(),
                                     gpuState, learningRate);
    std::string at = " after step " + std::to_string(step);
    if (std::string why = values.differences("values" + at); !why.empty())
      return why;
    for (size_t b = 0; b < state.size(); ++b)
      if (std::string why = state[b].differences(
              optimizerBufferNames(options)[b] + at);
          !why.empty())
        return why;
  }
  return "";
}

} // namespace

int main() {
  Device &device = cudaDevice(0);
  Queue &gpu = device.defaultQueue();
  Queue &cpu = hostStateDevice().queue;
  StateKernels &cuda = cudaStateKernels();
  StateKernels &host = cpuStateKernels();
  const int64_t n = 1000003; // Not a multiple of any block size.

  expect("accumulate gives the CPU's bits", [&]() -> std::string {
    Mirrored sum(gpu, wave(n, 3.0f, 0.1f)), addend(gpu, wave(n, 0.2f, 2.0f));
    host.accumulate(cpu, sum.onHost(), addend.onHost(), n);
    cuda.accumulate(gpu, sum.onDevice(), addend.onDevice(), n);
    return sum.differences("sum");
  });

  expect("rounding to bf16 and widening back give the CPU's bits",
         [&]() -> std::string {
           std::vector<float> given = wave(n, 3.0e4f, 0.5f);
           given[0] = NAN;
           given[1] = INFINITY;
           given[2] = 1.00390625f; // A tie: rounds to 1 (even).
           Mirrored values(gpu, given);
           std::vector<BFloat16> rounded(n);
           host.roundToBFloat16(cpu, rounded.data(), values.onHost(), n);
           host.widenBFloat16(cpu, values.onHost(), rounded.data(), n);
           Buffer onGpu = Buffer::allocate(gpu, n * sizeof(BFloat16));
           BFloat16 *gpuRounded = static_cast<BFloat16 *>(onGpu.data());
           cuda.roundToBFloat16(gpu, gpuRounded, values.onDevice(), n);
           cuda.widenBFloat16(gpu, values.onDevice(), gpuRounded, n);
           return values.differences("rounded");
         });

  expect("scale gives the CPU's bits", [&]() -> std::string {
    Mirrored values(gpu, wave(n, 3.0f, 0.4f));
    host.scale(cpu, values.onHost(), n, 0.3183099f);
    cuda.scale(gpu, values.onDevice(), n, 0.3183099f);
    return values.differences("values");
  });

  expect("accumulateScalar gives the CPU's bits", [&]() -> std::string {
    double hostSum = 0.125;
    Buffer sum = Buffer::allocate(gpu, sizeof(double));
    gpu.copy(sum.data(), &hostSum, sizeof(double));
    Mirrored losses(gpu, wave(7, 2.5f, 0.9f));
    for (int i = 0; i < 7; ++i) {
      host.accumulateScalar(cpu, &hostSum, losses.onHost() + i);
      cuda.accumulateScalar(gpu, static_cast<double *>(sum.data()),
                            losses.onDevice() + i);
    }
    double back = 0;
    gpu.copy(&back, sum.data(), sizeof(double));
    gpu.synchronize();
    if (std::memcmp(&back, &hostSum, sizeof(double)) != 0)
      return "gpu " + std::to_string(back) + ", cpu " +
             std::to_string(hostSum);
    return "";
  });

  expect("sumSquares agrees in double", [&]() -> std::string {
    Mirrored values(gpu, wave(n, 1.5f, 0.2f));
    std::vector<SquaredRange> ranges = {
        {0, n / 3, 0.5}, {n / 3, n, 0.0}, {17, 17, 1.25}, {5, 6, 0.0}};
    std::vector<double> expected = host.sumSquares(cpu, values.onHost(), ranges);
    std::vector<double> got = cuda.sumSquares(gpu, values.onDevice(), ranges);
    if (got.size() != expected.size())
      return std::to_string(got.size()) + " sums for " +
             std::to_string(expected.size()) + " ranges";
    for (size_t r = 0; r < got.size(); ++r)
      if (std::abs(got[r] - expected[r]) > 1e-12 * std::abs(expected[r]))
        return "range " + std::to_string(r) + ": gpu " +
               std::to_string(got[r]) + ", cpu " + std::to_string(expected[r]);
    // The GPU's order is fixed: the same bits run after run.
    std::vector<double> again = cuda.sumSquares(gpu, values.onDevice(), ranges);
    if (std::memcmp(again.data(), got.data(), got.size() * sizeof(double)))
      return "two runs on the GPU differ";
    return "";
  });

  OptimizerOptions sgd;
  sgd.kind = "sgd";
  sgd.weightDecay = 0.01f;
  expect("SGD steps give the CPU's bits",
         [&] { return compareSteps(gpu, cpu, sgd, 4); });
  OptimizerOptions momentum = sgd;
  momentum.momentum = 0.9f;
  expect("SGD with momentum steps give the CPU's bits",
         [&] { return compareSteps(gpu, cpu, momentum, 4); });
  OptimizerOptions adamw;
  adamw.kind = "adamw";
  adamw.weightDecay = 0.1f;
  expect("AdamW steps with weight decay give the CPU's bits",
         [&] { return compareSteps(gpu, cpu, adamw, 4); });

  std::printf("%s\n", failedChecks() ? "FAILED"
                                      : "all state kernel checks passed");
  return failedChecks() ? 1 : 0;
}

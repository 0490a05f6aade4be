//===- CudaLinearCrossEntropyCheck.cpp - CUDA fused loss against others ---===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaLinearCrossEntropyCheck on a GPU machine. Runs
// pp_cuda_linear_cross_entropy and its gradients on LM heads of 2 x 5 and
// 1 x 7 positions, depth 4, with 9 classes and with 1000 (more than a
// block has threads), the weight stored both ways, with and without a
// bias, reduction sum and mean, a chunk of one sequence. Each case checks
// that the loss and the hidden states' and bias's gradients are the bits of
// the unfused CUDA kernels pp-fuse-cross-entropy replaces (matmul, add,
// cross_entropy) and of the backward pp-autodiff builds for them
// (cross_entropy_grad, matmul, sum_to), the weight's gradient too with one
// sequence (one chunk), and that every result is the CPU twin's within
// 1e-5 (cuBLAS adds in another order). Prints one line per check and exits
// non-zero on a difference or a failed call.
//
//===----------------------------------------------------------------------===//

#include "DeviceCheck.h"
#include "DeviceTensors.h"

#include <cstdint>
#include <string>
#include <vector>

using namespace pp::runtime;
using namespace pp::runtime::testing;

namespace {

/// One LM head: its sizes and how its weight is stored.
struct Case {
  int64_t batch, sequence, depth, classes;
  bool transposed, biased;
  int reduction;
};

/// The operands of a case on one target (bias null without one).
struct Operands {
  pp_tensor *hidden, *weight, *labels, *bias, *grad;
};

/// Host labels of `batch` x `sequence` positions in [0, classes), every
/// fourth ignored (-100).
pp_tensor *hostLabels(int64_t batch, int64_t sequence, int64_t classes) {
  std::vector<int64_t> shape = {batch, sequence};
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_I64, 2, shape.data(), &tensor);
  int64_t *y = static_cast<int64_t *>(pp_tensor_data(tensor));
  for (int64_t i = 0; i < batch * sequence; ++i)
    y[i] = i % 4 == 3 ? -100 : (i * 37 + 5) % classes;
  return tensor;
}

Operands hostOperands(const Case &c) {
  std::vector<int64_t> weight = c.transposed
                                    ? std::vector<int64_t>{c.classes, c.depth}
                                    : std::vector<int64_t>{c.depth, c.classes};
  return {hostFloats({c.batch, c.sequence, c.depth}, 1.0f, 0.3f),
          hostFloats(weight, 0.5f, 1.1f),
          hostLabels(c.batch, c.sequence, c.classes),
          c.biased ? hostFloats({c.classes}, 0.2f, 2.2f) : nullptr,
          hostFloats({}, 1.0f, 0.7f)};
}

Operands deviceOperands(const Operands &host) {
  return {toDevice(host.hidden), toDevice(host.weight), toDevice(host.labels),
          host.bias ? toDevice(host.bias) : nullptr, toDevice(host.grad)};
}

/// The loss and the hidden states', weight's and bias's gradients.
struct Results {
  Tensor loss, hidden, weight, bias;
};

/// The unfused CUDA kernels: matmul, add, cross_entropy and the backward
/// pp-autodiff builds for them.
Results unfused(pp_frame &frame, const Case &c, const Operands &d) {
  Results r;
  Tensor logits(pp_cuda_matmul(&frame, d.hidden, d.weight, 0, c.transposed));
  if (d.bias)
    logits.reset(pp_cuda_add(&frame, logits.get(), d.bias));
  r.loss.reset(
      pp_cuda_cross_entropy(&frame, logits.get(), d.labels, -100, c.reduction));
  Tensor dLogits(pp_cuda_cross_entropy_grad(&frame, d.grad, logits.get(),
                                            d.labels, -100, c.reduction));
  r.hidden.reset(
      pp_cuda_matmul(&frame, dLogits.get(), d.weight, 0, !c.transposed));
  int64_t rows[] = {c.batch * c.sequence, c.depth};
  int64_t logitRows[] = {c.batch * c.sequence, c.classes};
  Tensor hiddenRows(pp_cuda_reshape(&frame, d.hidden, 2, rows));
  Tensor dRows(pp_cuda_reshape(&frame, dLogits.get(), 2, logitRows));
  r.weight.reset(
      c.transposed
          ? pp_cuda_matmul(&frame, dRows.get(), hiddenRows.get(), 1, 0)
          : pp_cuda_matmul(&frame, hiddenRows.get(), dRows.get(), 1, 0));
  if (d.bias)
    r.bias.reset(pp_cuda_sum_to(&frame, dLogits.get(), 1, &c.classes));
  return r;
}

/// The fused kernels of `target` ("cpu" or "cuda").
template <typename Loss, typename Grad>
Results fused(pp_frame &frame, const Case &c, const Operands &o, Loss loss,
              Grad grad) {
  Results r;
  r.loss.reset(loss(&frame, o.hidden, o.weight, o.labels, o.bias, c.sequence,
                    -100, c.reduction, c.transposed));
  pp_tensor *results[3] = {};
  grad(&frame, o.grad, o.hidden, o.weight, o.labels, o.bias, c.sequence, -100,
       c.reduction, c.transposed, results);
  r.hidden.reset(results[0]);
  r.weight.reset(results[1]);
  r.bias.reset(results[2]);
  return r;
}

std::string compareUnfused(const Case &c, const Operands &device) {
  pp_frame unfusedFrame, fusedFrame;
  Results expected = unfused(unfusedFrame, c, device);
  Results got = fused(fusedFrame, c, device, pp_cuda_linear_cross_entropy,
                      pp_cuda_linear_cross_entropy_grad);
  std::string why = unfusedFrame.error + fusedFrame.error;
  if (why.empty() && cudaDeviceSynchronize() != cudaSuccess)
    why = "the GPU failed";
  if (why.empty())
    why = sameBits("the loss", expected.loss, got.loss);
  if (why.empty())
    why = sameBits("the hidden states' gradient", expected.hidden, got.hidden);
  if (why.empty() && c.batch == 1)
    why = sameBits("the weight's gradient", expected.weight, got.weight);
  if (why.empty() && c.biased)
    why = sameBits("the bias's gradient", expected.bias, got.bias);
  return why;
}

std::string compareCpu(const Case &c, const Operands &host,
                       const Operands &device) {
  pp_frame cpuFrame, cudaFrame;
  Results expected = fused(cpuFrame, c, host, pp_cpu_linear_cross_entropy,
                           pp_cpu_linear_cross_entropy_grad);
  Results got = fused(cudaFrame, c, device, pp_cuda_linear_cross_entropy,
                      pp_cuda_linear_cross_entropy_grad);
  std::string why = cpuFrame.error + cudaFrame.error;
  if (why.empty() && cudaDeviceSynchronize() != cudaSuccess)
    why = "the GPU failed";
  if (why.empty())
    why = agree("the loss", expected.loss.get(), got.loss.get());
  if (why.empty())
    why = agree("the hidden states' gradient", expected.hidden.get(),
                got.hidden.get());
  if (why.empty())
    why =
        agree("the weight's gradient", expected.weight.get(), got.weight.get());
  if (why.empty() && c.biased)
    why = agree("the bias's gradient", expected.bias.get(), got.bias.get());
  return why;
}

void check(const Case &c) {
  std::string name =
      std::to_string(c.batch) + "x" + std::to_string(c.sequence) + ", V " +
      std::to_string(c.classes) +
      (c.transposed ? ", weight [V, D]" : ", weight [D, V]") +
      (c.biased ? ", bias" : "") + (c.reduction == 0 ? ", mean" : ", sum");
  Operands host = hostOperands(c);
  Operands device = deviceOperands(host);
  expect("linear_cross_entropy " + name + ": the unfused kernels' bits",
         [&] { return compareUnfused(c, device); });
  expect("linear_cross_entropy " + name + ": the CPU's within 1e-5",
         [&] { return compareCpu(c, host, device); });
  for (const Operands &operands : {host, device})
    for (pp_tensor *tensor : {operands.hidden, operands.weight, operands.labels,
                              operands.bias, operands.grad})
      pp_tensor_destroy(tensor);
}

} // namespace

int main() {
  if (!gpuPresent())
    return 1;
  for (int64_t classes : {9, 1000})
    for (bool transposed : {true, false}) {
      check({2, 5, 4, classes, transposed, transposed, transposed ? 1 : 0});
      check({1, 7, 4, classes, transposed, !transposed, 1});
    }
  return failedChecks() == 0 ? 0 : 1;
}

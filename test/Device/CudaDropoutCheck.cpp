//===- CudaDropoutCheck.cpp - pp_cuda_dropout against pp_cpu_dropout ------===//
//
// Needs a GPU, so it is not part of the lit suites (CI has none): run
// build/test/Device/PPCudaDropoutCheck on a GPU machine. Both kernels draw
// their masks from DropoutMask.h, so their results must be the same bits,
// in training calls (masks keyed by the frame's position) and outside them
// (a copy). Prints one line per case and exits non-zero on any mismatch or
// CUDA failure.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/pp_kernels_cuda.h"
#include "runtime/kernels/Frame.h"

#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <vector>

namespace {

/// Whether the CPU and GPU kernels give the same bits for `ratio` at
/// `position`.
bool compare(const pp::runtime::RunPosition &position, double ratio) {
  const int64_t shape[] = {6, 5, 7};
  pp_tensor *host = nullptr, *device = nullptr;
  if (pp_tensor_create(PP_DTYPE_F32, 3, shape, &host) != PP_OK ||
      pp_tensor_create_in(pp_cuda_tensor_allocator(), PP_DTYPE_F32, 3, shape,
                          &device) != PP_OK) {
    std::fprintf(stderr, "%s\n", pp_last_error());
    return false;
  }
  float *values = static_cast<float *>(pp_tensor_data(host));
  for (int64_t i = 0; i < pp_tensor_numel(host); ++i)
    values[i] = 0.01f * static_cast<float>(i) - 1.0f;
  cudaMemcpy(pp_tensor_data(device), values, pp_tensor_nbytes(host),
             cudaMemcpyHostToDevice);
  pp_frame cpuFrame, gpuFrame;
  cpuFrame.position = gpuFrame.position = position;
  pp_tensor *cpu = pp_cpu_dropout(&cpuFrame, host, 77, ratio);
  pp_tensor *gpu = pp_cuda_dropout(&gpuFrame, device, 77, ratio);
  bool ok = cpu && gpu;
  if (ok) {
    std::vector<float> fetched(pp_tensor_numel(cpu));
    ok = cudaMemcpy(fetched.data(), pp_tensor_data(gpu),
                    pp_tensor_nbytes(cpu),
                    cudaMemcpyDeviceToHost) == cudaSuccess &&
         std::memcmp(fetched.data(), pp_tensor_data(cpu),
                     pp_tensor_nbytes(cpu)) == 0;
  } else {
    std::fprintf(stderr, "%s%s\n", cpuFrame.error.c_str(),
                 gpuFrame.error.c_str());
  }
  for (pp_tensor *tensor : {host, device, cpu, gpu})
    if (tensor)
      pp_tensor_destroy(tensor);
  return ok;
}

} // namespace

int main() {
  int failures = 0;
  for (bool training : {false, true})
    for (double ratio : {0.0, 0.3, 0.9}) {
      bool ok = compare({9, 2, 12, training}, ratio);
      failures += !ok;
      std::printf("%s dropout training=%d ratio=%g\n", ok ? "PASS" : "FAIL",
                  training, ratio);
    }
  return failures == 0 ? 0 : 1;
}

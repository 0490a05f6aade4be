//===- CudaBackendPlugin.cpp - the CUDA backend, loaded on demand ---------===//

#include "tools/pp-rank/CudaBackendPlugin.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

std::unique_ptr<pp::runtime::Backend>
loadCudaBackend(const pp::runtime::CudaRank &rank) {
#ifdef PP_HAVE_CUDA
  std::string path = std::string(PP_LIBRARY_DIR) + "/libPPRankCuda.so";
  void *library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw std::runtime_error("cannot load the CUDA backend '" + path +
                             "': " + ::dlerror() +
                             "; rebuild pp (its PPRankCuda target) or use "
                             "--device cpu");
  auto create = reinterpret_cast<decltype(&ppRankCreateCudaBackend)>(
      ::dlsym(library, "ppRankCreateCudaBackend"));
  if (!create)
    throw std::runtime_error("the CUDA backend '" + path +
                             "' lacks ppRankCreateCudaBackend; rebuild pp");
  return std::unique_ptr<pp::runtime::Backend>(create(&rank));
#else
  (void)rank;
  throw std::runtime_error("this pp-rank was built without CUDA; rebuild on "
                           "a machine with the CUDA toolkit and NCCL, or use "
                           "--device cpu");
#endif
}

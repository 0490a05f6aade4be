# Detects the CUDA toolkit (nvcc, cuBLAS, NCCL), by default at /usr/local/cuda.
# Sets PP_HAVE_CUDA. Without a toolkit the CUDA parts are skipped, with one
# message saying so.
set(PP_HAVE_CUDA OFF)
if(NOT PP_ENABLE_CUDA)
  message(STATUS "pp: CUDA parts skipped (PP_ENABLE_CUDA=OFF)")
  return()
endif()

set(PP_CUDA_ROOT /usr/local/cuda CACHE PATH "Root of the CUDA toolkit")
if(NOT CMAKE_CUDA_COMPILER AND EXISTS ${PP_CUDA_ROOT}/bin/nvcc)
  set(CMAKE_CUDA_COMPILER ${PP_CUDA_ROOT}/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "pp: CUDA parts skipped: no nvcc under ${PP_CUDA_ROOT} or "
                 "on PATH (set PP_CUDA_ROOT to build them)")
  return()
endif()
# Hopper (H200) is the target; sm_80 keeps the build usable on A100.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
find_library(PP_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR}
             ${PP_CUDA_ROOT}/lib64)
find_path(PP_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
          ${PP_CUDA_ROOT}/include)
if(NOT PP_NCCL_LIBRARY OR NOT PP_NCCL_INCLUDE_DIR)
  message(STATUS "pp: CUDA parts skipped: nvcc found but no NCCL under "
                 "${PP_CUDA_ROOT}")
  return()
endif()
set(CMAKE_CUDA_STANDARD 17)
set(PP_HAVE_CUDA ON)
message(STATUS "pp: CUDA ${CUDAToolkit_VERSION} with cuBLAS and NCCL "
               "(${PP_NCCL_LIBRARY}); CUDA parts enabled")

# Finds every dependency pp builds against. scripts/setup.sh installs them.

# MLIR/LLVM 22, linked as the shared libMLIR.so and libLLVM.so.
set(PP_LLVM_ROOT /usr/lib/llvm-22 CACHE PATH "Root of the LLVM/MLIR 22 install")
find_package(MLIR REQUIRED CONFIG HINTS ${PP_LLVM_ROOT}/lib/cmake/mlir)
message(STATUS "pp: MLIR from ${MLIR_DIR}, LLVM ${LLVM_PACKAGE_VERSION}")
if(NOT LLVM_PACKAGE_VERSION VERSION_GREATER_EQUAL 22 OR
   LLVM_PACKAGE_VERSION VERSION_GREATER_EQUAL 23)
  message(FATAL_ERROR "pp needs LLVM/MLIR 22, found ${LLVM_PACKAGE_VERSION} "
                      "at ${MLIR_DIR}; run scripts/setup.sh or set PP_LLVM_ROOT")
endif()
list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
link_directories(${LLVM_BUILD_LIBRARY_DIR})
add_definitions(${LLVM_DEFINITIONS})
# HandleLLVMOptions is left out on purpose: it would impose -fno-exceptions
# on the runtime and frontends. Debian builds LLVM with RTTI, so no flag is
# needed to derive from MLIR classes.
# Link the monolithic shared libraries Debian ships instead of static
# component libraries: much faster links and a smaller build.
set(PP_MLIR_LIBS MLIR LLVM)

# Runtime dependencies.
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
# OpenBLAS's own cblas.h (declares openblas_*), not whichever cblas.h the
# Debian alternatives point at: BLIS ships one too.
find_path(PP_OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas
  NO_DEFAULT_PATH REQUIRED)
# More GEMM engines: oneDNN, and BLIS's OpenMP flavour linked statically
# (its BLAS and CBLAS symbols would otherwise compete with OpenBLAS's).
# (Debian's dnnl CMake package also asks for OpenCL headers pp never uses.)
find_library(PP_DNNL_LIBRARY dnnl REQUIRED)
find_path(PP_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h REQUIRED)
find_library(PP_BLIS_LIBRARY libblis.a
  PATHS /usr/lib/x86_64-linux-gnu/blis-openmp NO_DEFAULT_PATH REQUIRED)
find_path(PP_BLIS_INCLUDE_DIR blis.h
  PATHS /usr/include/x86_64-linux-gnu/blis-openmp NO_DEFAULT_PATH REQUIRED)
# oneDNN and BLIS run on OpenMP; pp sets its thread count per thread.
find_package(OpenMP REQUIRED)
find_package(nlohmann_json 3 REQUIRED CONFIG)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)

# Frontends.
find_package(ONNX REQUIRED CONFIG)
find_package(Protobuf REQUIRED)
find_package(Torch REQUIRED CONFIG)

# Tests.
find_package(GTest REQUIRED)
find_program(PP_LIT lit HINTS ${PP_LLVM_ROOT}/bin REQUIRED)
find_program(PP_FILECHECK FileCheck HINTS ${PP_LLVM_ROOT}/bin REQUIRED)

// RUN: rm -rf %t && pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 loss=mse:y" --pp-emit=%t -o /dev/null 2>/dev/null
// RUN: FileCheck %s < %t/manifest.json
// RUN: FileCheck %s --check-prefix=CPP < %t/stages.cpp
// RUN: FileCheck %s --check-prefix=CU < %t/stages.cu
// RUN: test -f %t/libstages.so
// The CUDA library is built when a run first needs it (test/Device builds
// one with the tree): emitting a package never runs nvcc.
// RUN: test ! -e %t/libstages_cuda.so
// The pass spelled out writes the same package.
// RUN: rm -rf %t.2 && pp-opt %S/Inputs/mlp.mlir --pp-compile="stages=2 loss=mse:y" --pp-emit-package="dir=%t.2 compile=false" -o /dev/null 2>/dev/null
// RUN: diff %t/stages.cpp %t.2/stages.cpp

// CHECK: "format": "pp-pipeline-package",
// CHECK: "num_stages": 2,
// CHECK: "microbatch_size": 2,
// CHECK: "loss": {
// CHECK-NEXT: "kind": "mse",
// CHECK-NEXT: "output": "y",
// CHECK: "parameters": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "w1",
// CHECK-NEXT: "role": "parameter",
// CHECK: "stage": 0,
// CHECK-NEXT: "init": "seeded_by_name"
// CHECK: "stages": [
// CHECK: "function": "stage0_forward",
// CHECK: "name": "x",
// CHECK-NEXT: "role": "input",
// CHECK-NEXT: "dtype": "f32",
// CHECK: "kind": "send",
// CHECK-NEXT: "peer": 1,
// CHECK: "libraries": {
// CHECK-NEXT: "cpu": {
// CHECK-NEXT: "source": "stages.cpp",
// CHECK-NEXT: "library": "libstages.so"

// CPP: #include "runtime/pp_kernels.h"
// CPP: extern "C" {
// CPP: void stage0_forward(pp_frame* [[F:v[0-9]+]]) {
// CPP: pp_cpu_matmul([[F]],
// CU: #include "runtime/cuda/pp_kernels_cuda.h"
// CU: pp_cuda_matmul(

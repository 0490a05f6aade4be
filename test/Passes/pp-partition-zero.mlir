// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=2 zero=0" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=ZERO0
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=2 zero=1" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=ZERO1
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=2 zero=2" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=ZERO2
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=2 zero=3" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=ZERO3
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=2 zero=2 optimizer-state=1" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=SGD
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=1 zero=3" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=ALONE
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 memory-limit=176128 data-parallel=2 zero=0" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=LIMIT0
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 memory-limit=176128 data-parallel=2 zero=1" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=LIMIT1
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 data-parallel=2 zero=3" 2>/dev/null | FileCheck %s --check-prefix=COSTS

// The memory model simulates the 1f1b table with the data-parallel actions
// of 2 replicas: each stage holds 4096 bytes of parameters (all trainable),
// their gradients, AdamW's two moments (8192 whole) and 81920 bytes of
// activations per microbatch, two microbatches in flight on rank 0.
// ZeRO-0 shards nothing: the partitioner's own figure.
// ZERO0: rank time_us peak_bytes
// ZERO0-NEXT: 0 {{[0-9.]+}} 180224
// ZERO0-NEXT: 1 {{[0-9.]+}} 98304
// ZERO0: data parallel: 2 replicas per rank, ZeRO-0
// ZERO0-NEXT: rank busy_us peak_act_bytes param_bytes grad_bytes optim_bytes act_bytes peak_bytes
// ZERO0-NEXT: 0 {{[0-9.]+}} 163840 4096 4096 8192 163840 180224
// ZERO0-NEXT: 1 {{[0-9.]+}} 81920 4096 4096 8192 81920 98304

// ZeRO-1 keeps half the optimizer state.
// ZERO1: rank time_us peak_bytes
// ZERO1-NEXT: 0 {{[0-9.]+}} 176128
// ZERO1: rank busy_us peak_act_bytes param_bytes grad_bytes optim_bytes act_bytes peak_bytes
// ZERO1-NEXT: 0 {{[0-9.]+}} 163840 4096 4096 4096 163840 176128
// ZERO1-NEXT: 1 {{[0-9.]+}} 81920 4096 4096 4096 81920 94208

// ZeRO-2 also half the gradients outside the backwards: rank 0 peaks
// after its second forward, before its first backward makes them whole.
// ZERO2: rank time_us peak_bytes
// ZERO2-NEXT: 0 {{[0-9.]+}} 174080
// ZERO2: rank busy_us peak_act_bytes param_bytes grad_bytes optim_bytes act_bytes peak_bytes
// ZERO2-NEXT: 0 {{[0-9.]+}} 163840 4096 2048 4096 163840 174080
// ZERO2-NEXT: 1 {{[0-9.]+}} 81920 4096 4096 4096 81920 94208

// ZeRO-3 gathers a stage's parameters before its first forward and
// releases them after its last backward: with one stage per rank the peak
// is ZeRO-2's (between steps it holds half).
// ZERO3: rank busy_us peak_act_bytes param_bytes grad_bytes optim_bytes act_bytes peak_bytes
// ZERO3-NEXT: 0 {{[0-9.]+}} 163840 4096 2048 4096 163840 174080

// SGD with momentum keeps one state byte per trainable byte.
// SGD: 0 0 fc1 .. fc4 {{.*}} 1024 4096 4096 81920 2
// SGD: rank busy_us peak_act_bytes param_bytes grad_bytes optim_bytes act_bytes peak_bytes
// SGD-NEXT: 0 {{[0-9.]+}} 163840 4096 2048 2048 163840 172032

// One replica shards nothing at any level.
// ALONE: rank time_us peak_bytes
// ALONE-NEXT: 0 {{[0-9.]+}} 180224
// ALONE-NOT: data parallel:

// A limit between the ZeRO-0 and ZeRO-1 peaks of the balanced cut: at
// ZeRO-0 a layer moves to rank 1, at ZeRO-1 the balanced cut fits.
// LIMIT0: 0 0 fc1 .. fc3
// LIMIT0: rank time_us peak_bytes
// LIMIT0-NEXT: 0 {{[0-9.]+}} 143360
// LIMIT1: 0 0 fc1 .. fc4
// LIMIT1: rank time_us peak_bytes
// LIMIT1-NEXT: 0 {{[0-9.]+}} 176128

// The stage costs record the data parallelism and each stage's peak.
// COSTS: data_parallel = 2 : i64
// COSTS-SAME: peak_bytes = 1.740800e+05
// COSTS-SAME: zero_level = 3 : i64

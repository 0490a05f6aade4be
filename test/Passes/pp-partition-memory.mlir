// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=BALANCED
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 memory-limit=170000" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=LIMITED
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 schedule=gpipe microbatches=4 flop-rate=1e9 byte-rate=1e9 link-rate=1e9" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=GPIPE

// Balanced, 1f1b with as many microbatches as ranks: rank 0 holds the
// activations (5 x 256x16 f32 per microbatch: x and four layers' results)
// of two microbatches, rank 1 of one. Peak memory per rank: parameters
// (4 x 16x16 f32 = 4096 bytes), their gradients (4096) and AdamW moments
// (8192) and the activations in flight.
// BALANCED: pipeline: 2 stages on 2 ranks (times in us per microbatch, memory in bytes)
// BALANCED-NEXT: stage rank nodes fwd_us bwd_in_us bwd_w_us total_us params param_bytes optim_bytes act_bytes in_flight act_held sent_bytes
// BALANCED-NEXT: 0 0 fc1 .. fc4 [[F0:[0-9.]+]] [[I0:[0-9.]+]] [[W0:[0-9.]+]] [[T0:[0-9.]+]] 1024 4096 8192 81920 2 163840 16384
// BALANCED-NEXT: boundary fc4: 16384 bytes
// BALANCED-NEXT: 1 1 fc5 .. loss [[F1:[0-9.]+]] {{.*}} 1024 4096 8192 81920 1 81920 0
// BALANCED-NEXT: rank time_us peak_bytes
// BALANCED-NEXT: 0 [[T0]] 180224
// BALANCED-NEXT: 1 {{[0-9.]+}} 98304

// A limit below rank 0's 180224 bytes moves a layer (and its two
// in-flight activations) to rank 1, though rank 1 then takes longer.
// LIMITED: 0 0 fc1 .. fc3
// LIMITED: 1 1 fc4 .. loss
// LIMITED: rank time_us peak_bytes
// LIMITED-NEXT: 0 {{[0-9.]+}} 143360
// LIMITED-NEXT: 1 {{[0-9.]+}} 118784

// GPipe holds all four microbatches on each stage; the rates scale the
// times (a layer's forward: 2x256x16x16 FLOP and 256x16x4 bytes in, 16x16x4
// weights and 256x16x4 out for the matmul, 256x16 FLOP and 2x256x16x4 bytes
// for tanh: 201.728 us at 1e9 per second) for each of four layers.
// GPIPE: 0 0 fc1 .. fc4 806.91 {{.*}} 81920 4 327680
// GPIPE: 1 1 fc5 .. loss {{.*}} 81920 4 327680

// The report simulates the schedule the partition was made for: its bubble
// with equal stages is the theory's, (p-1)/(m+p-1) = 1/5 for gpipe on 2
// ranks with 4 microbatches, 1/25 for zb-v (4 stages on 2 ranks in V
// placement).
// RUN: pp-opt %S/Inputs/mlp8-loss.mlir --pp-autodiff --pp-partition="stages=2 virtual-stages=2 placement=v schedule=zb-v microbatches=4" -o /dev/null --pp-report 2>/dev/null | FileCheck %s --check-prefix=ZBV
// GPIPE: schedule gpipe with 4 microbatches: bubble 20.0% ideal (equal stages), {{[0-9.]+}}% predicted; step {{[0-9.]+}} us
// GPIPE-NEXT: rank busy_us peak_act_bytes param_bytes grad_bytes optim_bytes act_bytes peak_bytes
// GPIPE-NEXT: 0 {{[0-9.]+}} 327680 4096 4096 8192 327680 344064
// ZBV: pipeline: 4 stages on 2 ranks
// ZBV: schedule zb-v with 4 microbatches: bubble 4.0% ideal (equal stages), {{[0-9.]+}}% predicted; step {{[0-9.]+}} us

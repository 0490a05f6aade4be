//===- MachineRates.h - this machine's compute, memory and link rates -*- C++ -*-===//
//
// The partitioner's cost model turns an op's FLOPs and bytes into seconds
// at a compute rate and a memory rate, and a message's bytes at a link rate
// (passes/pipeline/CostModel.h; pp-compile's flop-rate=, byte-rate= and
// link-rate=). measureMachineRates times the runtime's own kernels to find
// them; loadOrMeasureMachineRates keeps them in a file so that a machine is
// measured once:
//
//   <cacheDir>/machine-rates.json
//   {"format": 1, "entries": [{"machine": "<CPU model | flags | GEMM
//     libraries>", "threads": 1, "runtime": "<libPPRuntime build id>",
//     "flop_rate": 1.1e11, "byte_rate": 1.9e10, "link_rate": 2.4e10}]}
//
// An entry serves a request with the same machine, thread count and runtime
// build; another request adds its own entry.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_MACHINERATES_H
#define PP_RUNTIME_MACHINERATES_H

#include <string>

namespace pp::runtime {

struct MachineRates {
  /// FLOP/s of pp_cpu_matmul on transformer-sized products (2 m n k FLOPs).
  double flopsPerSecond = 0;
  /// Bytes/s of pp_cpu_add over tensors larger than the caches, counting
  /// its operands' and result's bytes as the cost model does.
  double bytesPerSecond = 0;
  /// Bytes/s of a memcpy between two buffers larger than the caches: a
  /// message between ranks of one host through shared memory. Messages
  /// between hosts are slower (the network).
  double linkBytesPerSecond = 0;
};

/// Times the runtime's kernels on `threads` threads (pp_set_threads; the
/// previous count is restored): each kernel's best call after a warm-up.
/// Takes well under a second.
MachineRates measureMachineRates(int threads);

/// The rates, and whether this call measured them (false: read from the
/// cache).
struct LoadedMachineRates {
  MachineRates rates;
  bool measured = false;
};

/// The rates of this machine at `threads` threads from
/// `cacheDir`/machine-rates.json, else measured and added to it (the folder
/// is created). A file that cannot be read or written gets a warning on
/// stderr naming it and the reason; the rates are measured all the same.
LoadedMachineRates loadOrMeasureMachineRates(const std::string &cacheDir,
                                             int threads);

} // namespace pp::runtime

#endif // PP_RUNTIME_MACHINERATES_H

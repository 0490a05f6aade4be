//===- NcclConnect.h - NCCL communicators over host groups ------*- C++ -*-===//

#ifndef PP_RUNTIME_CUDA_NCCLCONNECT_H
#define PP_RUNTIME_CUDA_NCCLCONNECT_H

#include "runtime/communication/Communicator.h"

#include <nccl.h>

#include <string>

namespace pp::runtime {

/// An NCCL communicator over the ranks of `ranks` on the current device
/// (NCCL rank i is rank i of `ranks`), its unique id made by rank 0 and
/// broadcast over `ranks`. Every member calls it; it returns once all have.
/// Throws std::runtime_error naming `purpose` on a failure.
ncclComm_t connectNccl(Communicator &ranks, const std::string &purpose);

/// A two-rank NCCL communicator between ranks `sender` and `receiver` of
/// `ranks` (NCCL rank 0 the sender, 1 the receiver), its unique id made by
/// the sender and broadcast over `ranks`. Every member of `ranks` calls it
/// with the same pair; it returns the communicator to the two, once both
/// have joined, and null to the others. Throws std::runtime_error naming
/// `purpose` on a failure.
ncclComm_t connectNcclPair(Communicator &ranks, int sender, int receiver,
                           const std::string &purpose);

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_NCCLCONNECT_H

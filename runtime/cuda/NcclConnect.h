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

} // namespace pp::runtime

#endif // PP_RUNTIME_CUDA_NCCLCONNECT_H

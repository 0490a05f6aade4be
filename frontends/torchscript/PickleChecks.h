//===- PickleChecks.h - a pickle's lengths fit its record -------*- C++ -*-===//
//
// LibTorch 1.13's unpickler takes the length a pickle's string or bytes
// opcode claims at its word: it allocates that many bytes, and fills them
// while reading, before it finds that the record ends first. A 4 KiB
// archive whose data.pkl claims a 4 GiB string made pp-opt take 4.4 GiB of
// memory and 20 s before LibTorch's "Unexpected end of pickler archive"
// (found by pp-fuzz-torchscript). The importer checks the claims against
// the record first.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_TORCHSCRIPT_PICKLECHECKS_H
#define PP_FRONTENDS_TORCHSCRIPT_PICKLECHECKS_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace pp::torchscript_frontend {

/// Walks the opcodes of the pickle `pickle` (protocol 0 to 5) up to its
/// STOP and returns what is wrong when an opcode's argument, or the bytes
/// a length-prefixed opcode claims, run past its end ("its opcode 'X' at
/// byte 12 claims 4294967280 bytes, past the end of its 83"); "" when none
/// does, or at an opcode pickle does not define (LibTorch reports it).
std::string checkPickleLengths(llvm::StringRef pickle);

} // namespace pp::torchscript_frontend

#endif // PP_FRONTENDS_TORCHSCRIPT_PICKLECHECKS_H

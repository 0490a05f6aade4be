//===- PackageAgreement.h - every rank runs the same package ----*- C++ -*-===//
//
// The ranks of a job over several machines each load the package from
// their own disk (or compile it there): a node whose partitioner measured
// other rates cuts the model elsewhere, and its ranks would exchange
// tensors of other shapes with the others, or none at all. Before anything
// else (before they link: packages with other meshes would link other
// ranks), the ranks compare what makes two packages interchangeable: the
// package's sources and parameters (not its compiled libraries, which
// compilers build differently) and its mesh.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_PACKAGEAGREEMENT_H
#define PP_RUNTIME_TRAINING_PACKAGEAGREEMENT_H

#include "runtime/package/Package.h"

#include <string>

namespace pp::runtime {

/// The SHA-256, in hex, of `package`'s mesh, stage count, microbatch size
/// and the digests of its files but compiled libraries (`*.so`): equal for
/// packages that run together.
std::string packageIdentity(const Package &package);

/// What a job whose ranks loaded different packages says after the ranks
/// that differ (RendezvousInfo::disagreement): why it stops and how to fix
/// it.
extern const char *const kPackageDisagreement;

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_PACKAGEAGREEMENT_H

//===- StageLibraryCache.h - stage libraries built on first use -*- C++ -*-===//
//
// A package carries its CPU stage library compiled and its CUDA library as
// source: the library of a target a package does not carry is compiled from
// the package's verified source the first time a run needs it and kept in
// the cache directory (CacheDirectory.h), so that CPU compiles and runs
// never pay for nvcc and a GPU run pays once per package.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PACKAGE_STAGELIBRARYCACHE_H
#define PP_RUNTIME_PACKAGE_STAGELIBRARYCACHE_H

#include "runtime/package/Package.h"

#include <ostream>
#include <string>

namespace pp::runtime {

/// The stage library of `target` for `package`: the package's own when it
/// carries one, else the library built from the package's source into the
/// cache `root`: ROOT/stage-libraries/KEY/LIBRARY, KEY a digest of the
/// source's SHA-256 and the compiler's identity (stageCompilerIdentity),
/// with its size and SHA-256 recorded in ROOT/stage-libraries/KEY.json.
/// A missing or damaged entry is compiled now, saying so on `notes`;
/// processes that need the same entry take turns (a lock per key), so the
/// ranks of a job compile it once. The cache and the package must be this
/// user's alone (TrustedFiles.h). Throws std::runtime_error saying what
/// went wrong (the compiler's log, an untrusted directory) and how to fix
/// it.
StageLibraryFile stageLibraryFor(const Package &package, StageTarget target,
                                 const std::string &root, std::ostream &notes);

} // namespace pp::runtime

#endif // PP_RUNTIME_PACKAGE_STAGELIBRARYCACHE_H

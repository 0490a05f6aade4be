//===- TrustedFiles.h - files only this user could have written -*- C++ -*-===//
//
// pp loads code (a package's stage libraries) and reads what chooses code
// or its speed (the compiled-model cache, machine rates, GEMM engine
// choices) only from files that nobody but the running user (or root)
// could have written: owned by the user or root, not writable by group or
// others, in a directory of the same kind, no symbolic link. Anything else
// is refused with the path, its owner and mode, and the fix, so that a
// shared, world-writable cache cannot plant code in someone else's run.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRUSTEDFILES_H
#define PP_RUNTIME_TRUSTEDFILES_H

#include <optional>
#include <string>

namespace pp::runtime {

/// Why the file open at `fd`, named `path` (`what` in messages: "the stage
/// library"), might hold another user's bytes: owned by a user other than
/// this process's effective one or root, or writable by group or others;
/// "" when only this user could have written it.
std::string untrustedFileProblem(int fd, const std::string &path,
                                 const std::string &what);

/// The same for the file or directory `path` itself (not followed when it
/// is a symbolic link: a link is refused), and for the directory holding
/// it, which must not let others rename it away; "" when trusted. A missing
/// path is a problem too.
std::string untrustedPathProblem(const std::string &path,
                                 const std::string &what);

/// The contents of the regular file `path` (`what` in messages) when only
/// this user or root can have written it and its folder
/// (untrustedFileProblem, untrustedPathProblem); else nullopt with
/// `problem` saying why, empty when the file does not exist.
std::optional<std::string> readTrustedFile(const std::string &path,
                                           const std::string &what,
                                           std::string &problem);

/// Creates the directory `path` (and missing parents) for this user only
/// (mode 0700) and checks it with untrustedPathProblem. With `repair`, a
/// directory of this user's that others may write is made 0700 first (for
/// a default location the user never chose). "" on success, else why it
/// cannot be used and how to fix it.
std::string preparePrivateDirectory(const std::string &path, bool repair,
                                    const std::string &what);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRUSTEDFILES_H

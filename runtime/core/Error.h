//===- Error.h - runtime error reporting ------------------------*- C++ -*-===//
//
// Internal helpers that record the message behind a failed pp_status.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_ERROR_H
#define PP_RUNTIME_ERROR_H

#include "runtime/pp_runtime.h"

#include <sstream>
#include <string>

namespace pp::runtime {

/// Records `message` as this thread's last error and returns `status`.
pp_status fail(pp_status status, const std::string &message);

/// Builds a message from streamable parts and records it as the last error.
template <typename... Parts>
pp_status failWith(pp_status status, const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return fail(status, os.str());
}

} // namespace pp::runtime

#endif // PP_RUNTIME_ERROR_H

//===- OpProfile.h - time per op kind in the stage functions ----*- C++ -*-===//
//
// Generated stage functions bracket every kernel call and message with
// pp_frame_profile_begin/pp_frame_profile_end (runtime/pp_kernels.h). A
// frame whose `profile` is set adds each bracket's wall time to the op kind
// it names; without one the brackets only test a pointer.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_OPPROFILE_H
#define PP_RUNTIME_OPPROFILE_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

namespace pp::runtime {

class OpProfile {
public:
  /// The calls of one op kind and the seconds they took.
  struct Totals {
    int64_t calls = 0;
    double seconds = 0;
  };

  /// `synchronize` waits for the work queued where the kernels run (a GPU
  /// stream), so that a bracket times the kernel, not its launch; null when
  /// kernels finish before they return (the host).
  explicit OpProfile(std::function<void()> synchronize = nullptr)
      : synchronize(std::move(synchronize)) {}

  /// Starts timing a call of op kind `kind` (a string the generated code
  /// keeps alive: a literal).
  void begin(const char *kind);
  /// Ends the call begin() started; does nothing without one.
  void end();
  /// The totals so far by op kind.
  std::map<std::string, Totals> byKind() const;

private:
  std::function<void()> synchronize;
  /// Keyed by the literal's address: one hash of a pointer per call.
  std::unordered_map<const char *, Totals> byLiteral;
  const char *current = nullptr;
  std::chrono::steady_clock::time_point started;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_OPPROFILE_H

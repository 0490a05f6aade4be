//===- OpProfile.h - time per op kind in the stage functions ----*- C++ -*-===//
//
// Generated stage functions bracket every kernel call and message with
// pp_frame_profile_begin/pp_frame_profile_end (runtime/pp_kernels.h). A
// frame whose `profile` is set adds each bracket's wall time to the op kind
// it names and to its category (pp_profile_category); without one the
// brackets only test a pointer.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_OPPROFILE_H
#define PP_RUNTIME_OPPROFILE_H

#include "runtime/pp_kernels.h"

#include <array>
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

  /// Seconds so far per pp_profile_category.
  using CategorySeconds = std::array<double, PP_PROFILE_CATEGORIES>;

  /// Starts timing a call of op kind `kind` (a string the generated code
  /// keeps alive: a literal) in `category`.
  void begin(const char *kind, pp_profile_category category);
  /// Ends the call begin() started; does nothing without one.
  void end();
  /// The totals so far by op kind.
  std::map<std::string, Totals> byKind() const;
  /// The seconds so far by category.
  const CategorySeconds &byCategory() const { return categorySeconds; }

private:
  std::function<void()> synchronize;
  /// Keyed by the literal's address: one hash of a pointer per call.
  std::unordered_map<const char *, Totals> byLiteral;
  CategorySeconds categorySeconds{};
  const char *current = nullptr;
  pp_profile_category currentCategory = PP_PROFILE_OTHER;
  std::chrono::steady_clock::time_point started;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_OPPROFILE_H

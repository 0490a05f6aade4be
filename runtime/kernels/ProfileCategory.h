//===- ProfileCategory.h - how generated code names a category --*- C++ -*-===//
//
// The contract between pp-lower-to-runtime, which writes each profile
// bracket's pp_profile_category (runtime/pp_kernels.h) into the generated
// code by name, and the runtime, which adds the bracket's time to it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_PROFILECATEGORY_H
#define PP_RUNTIME_KERNELS_PROFILECATEGORY_H

#include "runtime/pp_kernels.h"

namespace pp::runtime {

/// The enumerator's name, as generated code writes it ("PP_PROFILE_GEMM").
constexpr const char *profileCategorySpelling(pp_profile_category category) {
  switch (category) {
  case PP_PROFILE_GEMM:
    return "PP_PROFILE_GEMM";
  case PP_PROFILE_ATTENTION:
    return "PP_PROFILE_ATTENTION";
  case PP_PROFILE_COMMUNICATION:
    return "PP_PROFILE_COMMUNICATION";
  default:
    return "PP_PROFILE_OTHER";
  }
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_PROFILECATEGORY_H

//===- ProfileCategory.h - how generated code names a category --*- C++ -*-===//
//
// The contract between pp-lower-to-runtime, which writes each profile
// bracket's pp_profile_category (runtime/pp_kernels.h) into the generated
// code by name, and the runtime, which adds the bracket's time to it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_PROFILECATEGORY_H
#define PP_RUNTIME_KERNELS_PROFILECATEGORY_H

#include "runtime/core/EnumNames.h"
#include "runtime/pp_kernels.h"

namespace pp::runtime {

/// Each category's enumerator name, as generated code writes it.
inline constexpr EnumNames<pp_profile_category, PP_PROFILE_CATEGORIES>
    kProfileCategorySpellings = {
        {PP_PROFILE_OTHER, "PP_PROFILE_OTHER"},
        {PP_PROFILE_GEMM, "PP_PROFILE_GEMM"},
        {PP_PROFILE_ATTENTION, "PP_PROFILE_ATTENTION"},
        {PP_PROFILE_COMMUNICATION, "PP_PROFILE_COMMUNICATION"},
};

/// The enumerator's name, as generated code writes it ("PP_PROFILE_GEMM").
inline const char *profileCategorySpelling(pp_profile_category category) {
  return enumName(kProfileCategorySpellings, category, "PP_PROFILE_OTHER");
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_PROFILECATEGORY_H

//===- ReduceDtype.cpp - the element type of gradient sums ----------------===//

#include "runtime/training/ReduceDtype.h"

#include "runtime/core/EnumNames.h"

namespace pp::runtime {
namespace {

constexpr EnumNames<ReduceDtype, 2> kDtypes = {
    {ReduceDtype::F32, "f32"},
    {ReduceDtype::BF16, "bf16"},
};

} // namespace

std::optional<ReduceDtype> parseReduceDtype(const std::string &name) {
  return parseEnum(kDtypes, name);
}

const char *reduceDtypeName(ReduceDtype dtype) {
  return enumName(kDtypes, dtype, "unknown");
}

} // namespace pp::runtime

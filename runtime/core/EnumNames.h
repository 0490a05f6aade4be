//===- EnumNames.h - enums spelled as in the manifest -----------*- C++ -*-===//
//
// The runtime's enums (phases, roles, mesh axis kinds) each keep one table
// of (value, spelling); these look values and spellings up in it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_ENUMNAMES_H
#define PP_RUNTIME_ENUMNAMES_H

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace pp::runtime {

template <typename Enum, size_t N>
using EnumNames = std::pair<Enum, const char *>[N];

/// The value `table` spells `name`, or nullopt.
template <typename Enum, size_t N>
std::optional<Enum> parseEnum(const EnumNames<Enum, N> &table,
                              const std::string &name) {
  for (auto [value, spelling] : table)
    if (name == spelling)
      return value;
  return std::nullopt;
}

/// How `table` spells `value`; `unknown` when it has no entry.
template <typename Enum, size_t N>
const char *enumName(const EnumNames<Enum, N> &table, Enum value,
                     const char *unknown) {
  for (auto [candidate, spelling] : table)
    if (candidate == value)
      return spelling;
  return unknown;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_ENUMNAMES_H

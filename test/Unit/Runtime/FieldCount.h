//===- FieldCount.h - the number of fields of an aggregate ------*- C++ -*-===//
//
// Tests of a file format assert the field count of each struct it
// serializes, so that a field added without being written and read stops
// the build.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TEST_UNIT_RUNTIME_FIELDCOUNT_H
#define PP_TEST_UNIT_RUNTIME_FIELDCOUNT_H

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

namespace pp::runtime::test {

template <typename T> struct IsOptional : std::false_type {};
template <typename T> struct IsOptional<std::optional<T>> : std::true_type {};

/// Converts to any member type (an optional through its own constructor),
/// so that T{AnyField, ...} compiles for up to T's field count.
struct AnyField {
  template <typename T,
            typename = std::enable_if_t<!IsOptional<std::decay_t<T>>::value>>
  operator T() const;
};

template <typename T, typename... Fields>
constexpr auto braceable(int) -> decltype(T{std::declval<Fields>()...}, true) {
  return true;
}
template <typename T, typename... Fields> constexpr bool braceable(...) {
  return false;
}

/// The number of fields of the aggregate T.
template <typename T, typename... Fields> constexpr std::size_t fieldCount() {
  if constexpr (braceable<T, Fields..., AnyField>(0))
    return fieldCount<T, Fields..., AnyField>();
  else
    return sizeof...(Fields);
}

} // namespace pp::runtime::test

#endif // PP_TEST_UNIT_RUNTIME_FIELDCOUNT_H

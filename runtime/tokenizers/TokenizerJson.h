//===- TokenizerJson.h - reading tokenizer.json's fields --------*- C++ -*-===//
//
// Field access for the tokenizer.json loader and its components: a
// missing field or one of the wrong type throws TokenizerJsonError naming
// the field by its path ("model.vocab", "pre_tokenizer.pretokenizers[1]").
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_TOKENIZERJSON_H
#define PP_RUNTIME_TOKENIZERS_TOKENIZERJSON_H

#include "runtime/tokenizers/Regex.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace pp::runtime {

/// What is wrong with a field of a tokenizer.json; the loader adds the
/// file's name.
class TokenizerJsonError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws TokenizerJsonError "`where`: `problem`".
[[noreturn]] void refuseField(const std::string &where,
                              const std::string &problem);

/// The member `name` of the object `object` (at path `where`); throws
/// when `object` is not an object or lacks it.
const nlohmann::json &requireField(const nlohmann::json &object,
                                   const std::string &where,
                                   const std::string &name);
/// The string member `name`; throws when it is missing or not a string.
std::string stringField(const nlohmann::json &object, const std::string &where,
                        const std::string &name);
/// The boolean member `name`, `fallback` when missing or null.
bool boolField(const nlohmann::json &object, const std::string &where,
               const std::string &name, bool fallback);
/// The component's "type" string.
std::string componentType(const nlohmann::json &component,
                          const std::string &where);
/// The text of a Split or Replace "pattern": {"String": s} or
/// {"Regex": r}; `isRegex` says which.
std::string patternField(const nlohmann::json &component,
                         const std::string &where, bool &isRegex);
/// The "pattern" compiled; throws naming the field when it does not
/// compile.
Regex compiledPattern(const nlohmann::json &component,
                      const std::string &where);

/// The steps of a Sequence component: each element of its list `field`
/// parsed by `parse(element, path)`, the null ones left out.
template <typename Step, typename Parse>
std::vector<std::unique_ptr<Step>>
parseSteps(const nlohmann::json &component, const std::string &where,
           const std::string &field, Parse parse) {
  const nlohmann::json &list = requireField(component, where, field);
  if (!list.is_array())
    refuseField(where + "." + field, "is not a list");
  std::vector<std::unique_ptr<Step>> steps;
  for (size_t i = 0; i < list.size(); ++i)
    if (std::unique_ptr<Step> step =
            parse(list[i], where + "." + field + "[" + std::to_string(i) + "]"))
      steps.push_back(std::move(step));
  return steps;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_TOKENIZERJSON_H

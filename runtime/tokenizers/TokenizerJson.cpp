//===- TokenizerJson.cpp - reading tokenizer.json's fields ----------------===//

#include "runtime/tokenizers/TokenizerJson.h"

namespace pp::runtime {

void refuseField(const std::string &where, const std::string &problem) {
  throw TokenizerJsonError(where + ": " + problem);
}

const nlohmann::json &requireField(const nlohmann::json &object,
                                   const std::string &where,
                                   const std::string &name) {
  if (!object.is_object())
    refuseField(where, std::string("is a JSON ") + object.type_name() +
                           ", not an object");
  auto found = object.find(name);
  if (found == object.end())
    refuseField(where.empty() ? name : where + "." + name,
                "is missing; tokenizers save_pretrained writes it");
  return *found;
}

std::string stringField(const nlohmann::json &object, const std::string &where,
                        const std::string &name) {
  const nlohmann::json &value = requireField(object, where, name);
  if (!value.is_string())
    refuseField(where + "." + name, std::string("is a JSON ") +
                                        value.type_name() + ", not a string");
  return value.get<std::string>();
}

bool boolField(const nlohmann::json &object, const std::string &where,
               const std::string &name, bool fallback) {
  auto found = object.find(name);
  if (found == object.end() || found->is_null())
    return fallback;
  if (!found->is_boolean())
    refuseField(where + "." + name, std::string("is a JSON ") +
                                        found->type_name() +
                                        ", not true or false");
  return found->get<bool>();
}

std::string componentType(const nlohmann::json &component,
                          const std::string &where) {
  return stringField(component, where, "type");
}

std::string patternField(const nlohmann::json &component,
                         const std::string &where, bool &isRegex) {
  const nlohmann::json &pattern = requireField(component, where, "pattern");
  std::string patternWhere = where + ".pattern";
  if (pattern.is_object() && pattern.contains("Regex")) {
    isRegex = true;
    return stringField(pattern, patternWhere, "Regex");
  }
  if (pattern.is_object() && pattern.contains("String")) {
    isRegex = false;
    return stringField(pattern, patternWhere, "String");
  }
  refuseField(patternWhere, "is neither {\"String\": ...} nor {\"Regex\": ...}");
}

Regex compiledPattern(const nlohmann::json &component,
                      const std::string &where) {
  bool isRegex = false;
  std::string pattern = patternField(component, where, isRegex);
  try {
    return Regex(pattern,
                 isRegex ? Regex::Syntax::Regex : Regex::Syntax::Literal);
  } catch (const std::invalid_argument &failure) {
    refuseField(where + ".pattern", failure.what());
  }
}

} // namespace pp::runtime

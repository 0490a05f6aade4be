//===- Normalizers.cpp - tokenizer.json normalizers -----------------------===//

#include "runtime/tokenizers/Normalizers.h"

#include "runtime/tokenizers/Regex.h"
#include "runtime/tokenizers/TokenizerJson.h"

#include <vector>

namespace pp::runtime {
namespace {

class PrependNormalizer : public Normalizer {
public:
  explicit PrependNormalizer(std::string prefix) : prefix(std::move(prefix)) {}
  void normalize(std::string &text) const override {
    if (!text.empty())
      text.insert(0, prefix);
  }

private:
  std::string prefix;
};

class ReplaceNormalizer : public Normalizer {
public:
  ReplaceNormalizer(Regex pattern, std::string content)
      : pattern(std::move(pattern)), content(std::move(content)) {}
  void normalize(std::string &text) const override {
    std::string replaced;
    size_t copied = 0;
    for (auto [begin, end] : pattern.matches(text)) {
      replaced.append(text, copied, begin - copied);
      replaced += content;
      copied = end;
    }
    if (copied == 0 && replaced.empty())
      return;
    replaced.append(text, copied, std::string::npos);
    text = std::move(replaced);
  }

private:
  Regex pattern;
  std::string content;
};

class SequenceNormalizer : public Normalizer {
public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps(std::move(steps)) {}
  void normalize(std::string &text) const override {
    for (const std::unique_ptr<Normalizer> &step : steps)
      step->normalize(text);
  }

private:
  std::vector<std::unique_ptr<Normalizer>> steps;
};

} // namespace

std::unique_ptr<Normalizer> parseNormalizer(const nlohmann::json &component,
                                            const std::string &where) {
  if (component.is_null())
    return nullptr;
  std::string type = componentType(component, where);
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(
        stringField(component, where, "prepend"));
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(
        compiledPattern(component, where),
        stringField(component, where, "content"));
  if (type == "Sequence")
    return std::make_unique<SequenceNormalizer>(parseSteps<Normalizer>(
        component, where, "normalizers", parseNormalizer));
  refuseField(where, "the normalizer \"" + type +
                         "\" is not supported; pp runs Prepend, Replace and "
                         "Sequence of them (or none)");
}

} // namespace pp::runtime

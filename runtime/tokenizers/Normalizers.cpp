//===- Normalizers.cpp - tokenizer.json normalizers -----------------------===//

#include "runtime/tokenizers/Normalizers.h"

#include "runtime/tokenizers/Regex.h"
#include "runtime/tokenizers/TokenizerJson.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <stdexcept>
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

/// NFC, NFD, NFKC or NFKD, by ICU.
class UnicodeNormalizer : public Normalizer {
public:
  explicit UnicodeNormalizer(const icu::Normalizer2 &form) : form(form) {}
  void normalize(std::string &text) const override {
    UErrorCode status = U_ZERO_ERROR;
    if (form.isNormalizedUTF8(text, status) && U_SUCCESS(status))
      return;
    std::string normalized;
    icu::StringByteSink<std::string> sink(&normalized);
    status = U_ZERO_ERROR;
    form.normalizeUTF8(0, text, sink, nullptr, status);
    if (U_FAILURE(status))
      throw std::runtime_error(std::string("Unicode normalization failed (ICU: ") +
                               u_errorName(status) + ")");
    text = std::move(normalized);
  }

private:
  const icu::Normalizer2 &form;
};

/// ICU's normalizer for the tokenizer.json type `type`, or null.
const icu::Normalizer2 *unicodeForm(const std::string &type) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2 *form = nullptr;
  if (type == "NFC")
    form = icu::Normalizer2::getNFCInstance(status);
  else if (type == "NFD")
    form = icu::Normalizer2::getNFDInstance(status);
  else if (type == "NFKC")
    form = icu::Normalizer2::getNFKCInstance(status);
  else if (type == "NFKD")
    form = icu::Normalizer2::getNFKDInstance(status);
  return U_SUCCESS(status) ? form : nullptr;
}

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
  if (const icu::Normalizer2 *form = unicodeForm(type))
    return std::make_unique<UnicodeNormalizer>(*form);
  if (type == "Sequence")
    return std::make_unique<SequenceNormalizer>(parseSteps<Normalizer>(
        component, where, "normalizers", parseNormalizer));
  refuseField(where, "the normalizer \"" + type +
                         "\" is not supported; pp runs NFC, NFD, NFKC, NFKD, "
                         "Prepend, Replace and Sequence of them (or none)");
}

} // namespace pp::runtime

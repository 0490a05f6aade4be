//===- PreTokenizers.cpp - tokenizer.json pre-tokenizers ------------------===//

#include "runtime/tokenizers/PreTokenizers.h"

#include "runtime/tokenizers/ByteLevel.h"
#include "runtime/tokenizers/Regex.h"
#include "runtime/tokenizers/TokenizerJson.h"

#include <algorithm>

namespace pp::runtime {
namespace {

/// What becomes of a Split's matches (Hugging Face's
/// SplitDelimiterBehavior).
enum class Delimiter {
  Removed,
  Isolated,
  MergedWithPrevious,
  MergedWithNext,
  Contiguous
};

/// A byte range of a piece and whether the pattern matched it.
struct Span {
  size_t begin;
  size_t end;
  bool match;
};

/// The spans of `text` of `size` bytes: the matches and the text between.
std::vector<Span> spansOf(const std::vector<std::pair<size_t, size_t>> &found,
                          size_t size, bool invert) {
  std::vector<Span> spans;
  size_t previous = 0;
  for (auto [begin, end] : found) {
    if (begin > previous)
      spans.push_back(Span{previous, begin, invert});
    spans.push_back(Span{begin, end, !invert});
    previous = end;
  }
  if (previous < size)
    spans.push_back(Span{previous, size, invert});
  return spans;
}

/// The pieces `spans` make under `behavior`, ported from Hugging Face's
/// NormalizedString::split.
std::vector<Span> applyDelimiter(const std::vector<Span> &spans,
                                 Delimiter behavior) {
  std::vector<Span> pieces;
  bool previousMatch = false;
  switch (behavior) {
  case Delimiter::Isolated:
    return spans;
  case Delimiter::Removed:
    for (const Span &span : spans)
      if (!span.match)
        pieces.push_back(span);
    return pieces;
  case Delimiter::MergedWithPrevious:
  case Delimiter::Contiguous:
    for (const Span &span : spans) {
      bool extend = behavior == Delimiter::Contiguous
                        ? span.match == previousMatch
                        : span.match && !previousMatch;
      if (extend && !pieces.empty())
        pieces.back().end = span.end;
      else
        pieces.push_back(Span{span.begin, span.end, false});
      previousMatch = span.match;
    }
    return pieces;
  case Delimiter::MergedWithNext:
    for (auto span = spans.rbegin(); span != spans.rend(); ++span) {
      if (span->match && !previousMatch && !pieces.empty())
        pieces.back().begin = span->begin;
      else
        pieces.push_back(Span{span->begin, span->end, false});
      previousMatch = span->match;
    }
    std::reverse(pieces.begin(), pieces.end());
    return pieces;
  }
  return pieces;
}

/// Cuts each piece by `pattern` under `behavior`.
void splitBy(const Regex &pattern, Delimiter behavior, bool invert,
             std::vector<PreToken> &pieces) {
  std::vector<PreToken> result;
  result.reserve(pieces.size());
  for (PreToken &piece : pieces) {
    std::vector<Span> spans = applyDelimiter(
        spansOf(pattern.matches(piece.text), piece.text.size(), invert),
        behavior);
    for (const Span &span : spans)
      if (span.end > span.begin)
        result.push_back(PreToken{piece.text.substr(span.begin,
                                                    span.end - span.begin),
                                  piece.atStart && span.begin == 0});
  }
  pieces = std::move(result);
}

class SplitPreTokenizer : public PreTokenizer {
public:
  SplitPreTokenizer(Regex pattern, Delimiter behavior, bool invert)
      : pattern(std::move(pattern)), behavior(behavior), invert(invert) {}
  void split(std::vector<PreToken> &pieces) const override {
    splitBy(pattern, behavior, invert, pieces);
  }

private:
  Regex pattern;
  Delimiter behavior;
  bool invert;
};

class ByteLevelPreTokenizer : public PreTokenizer {
public:
  ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex)
      : addPrefixSpace(addPrefixSpace),
        gpt2Pattern(useRegex ? std::make_unique<Regex>(kGpt2PreTokenizerRegex)
                             : nullptr) {}
  void split(std::vector<PreToken> &pieces) const override {
    if (addPrefixSpace)
      for (PreToken &piece : pieces)
        if (piece.text.empty() || piece.text[0] != ' ')
          piece.text.insert(0, " ");
    if (gpt2Pattern)
      splitBy(*gpt2Pattern, Delimiter::Isolated, false, pieces);
    const ByteLevelAlphabet &alphabet = ByteLevelAlphabet::get();
    for (PreToken &piece : pieces) {
      std::string spelled;
      alphabet.spell(piece.text, spelled);
      piece.text = std::move(spelled);
    }
  }

private:
  bool addPrefixSpace;
  std::unique_ptr<Regex> gpt2Pattern;
};

/// Metaspace's prepend_scheme.
enum class Prepend { Always, First, Never };

class MetaspacePreTokenizer : public PreTokenizer {
public:
  MetaspacePreTokenizer(const std::string &replacement, Prepend prepend,
                        bool splitWords)
      : replacement(replacement), prepend(prepend),
        spaces(" ", Regex::Syntax::Literal),
        replacementPattern(replacement, Regex::Syntax::Literal),
        splitWords(splitWords) {}
  void split(std::vector<PreToken> &pieces) const override {
    for (PreToken &piece : pieces) {
      std::string replaced;
      size_t copied = 0;
      for (auto [begin, end] : spaces.matches(piece.text)) {
        replaced.append(piece.text, copied, begin - copied);
        replaced += replacement;
        copied = end;
      }
      replaced.append(piece.text, copied, std::string::npos);
      bool prefixed = replaced.compare(0, replacement.size(), replacement) == 0;
      if (!prefixed && (prepend == Prepend::Always ||
                        (prepend == Prepend::First && piece.atStart)))
        replaced.insert(0, replacement);
      piece.text = std::move(replaced);
    }
    if (splitWords)
      splitBy(replacementPattern, Delimiter::MergedWithNext, false, pieces);
  }

private:
  std::string replacement;
  Prepend prepend;
  Regex spaces;
  Regex replacementPattern;
  bool splitWords;
};

class SequencePreTokenizer : public PreTokenizer {
public:
  explicit SequencePreTokenizer(
      std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps(std::move(steps)) {}
  void split(std::vector<PreToken> &pieces) const override {
    for (const std::unique_ptr<PreTokenizer> &step : steps)
      step->split(pieces);
  }

private:
  std::vector<std::unique_ptr<PreTokenizer>> steps;
};

Delimiter parseDelimiter(const nlohmann::json &component,
                         const std::string &where) {
  std::string behavior = stringField(component, where, "behavior");
  if (behavior == "Removed")
    return Delimiter::Removed;
  if (behavior == "Isolated")
    return Delimiter::Isolated;
  if (behavior == "MergedWithPrevious")
    return Delimiter::MergedWithPrevious;
  if (behavior == "MergedWithNext")
    return Delimiter::MergedWithNext;
  if (behavior == "Contiguous")
    return Delimiter::Contiguous;
  refuseField(where + ".behavior",
              "\"" + behavior +
                  "\" is no Split behavior; Hugging Face's are Removed, "
                  "Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

std::unique_ptr<PreTokenizer> parseSplit(const nlohmann::json &component,
                                         const std::string &where) {
  Regex pattern = compiledPattern(component, where);
  return std::make_unique<SplitPreTokenizer>(
      std::move(pattern), parseDelimiter(component, where),
      boolField(component, where, "invert", false));
}

std::unique_ptr<PreTokenizer> parseMetaspace(const nlohmann::json &component,
                                             const std::string &where) {
  std::string replacement = stringField(component, where, "replacement");
  if (replacement.empty())
    refuseField(where + ".replacement", "is empty; Metaspace needs a character");
  // Before tokenizers 0.19 Metaspace had add_prefix_space instead.
  Prepend prepend = boolField(component, where, "add_prefix_space", true)
                        ? Prepend::Always
                        : Prepend::Never;
  if (component.contains("prepend_scheme")) {
    std::string scheme = stringField(component, where, "prepend_scheme");
    if (scheme == "always")
      prepend = Prepend::Always;
    else if (scheme == "first")
      prepend = Prepend::First;
    else if (scheme == "never")
      prepend = Prepend::Never;
    else
      refuseField(where + ".prepend_scheme",
                  "\"" + scheme + "\" is not always, first or never");
  }
  return std::make_unique<MetaspacePreTokenizer>(
      replacement, prepend, boolField(component, where, "split", true));
}

} // namespace

std::unique_ptr<PreTokenizer>
parsePreTokenizer(const nlohmann::json &component, const std::string &where) {
  if (component.is_null())
    return nullptr;
  std::string type = componentType(component, where);
  if (type == "Split")
    return parseSplit(component, where);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(
        boolField(component, where, "add_prefix_space", true),
        boolField(component, where, "use_regex", true));
  if (type == "Metaspace")
    return parseMetaspace(component, where);
  if (type == "Sequence")
    return std::make_unique<SequencePreTokenizer>(parseSteps<PreTokenizer>(
        component, where, "pretokenizers", parsePreTokenizer));
  refuseField(where, "the pre-tokenizer \"" + type +
                         "\" is not supported; pp runs ByteLevel, Split, "
                         "Metaspace and Sequence of them (or none)");
}

} // namespace pp::runtime

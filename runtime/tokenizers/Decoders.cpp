//===- Decoders.cpp - tokenizer.json decoders -----------------------------===//

#include "runtime/tokenizers/Decoders.h"

#include "runtime/tokenizers/ByteLevel.h"
#include "runtime/tokenizers/TokenizerJson.h"
#include "runtime/tokenizers/Utf8.h"

#include <optional>

namespace pp::runtime {
namespace {

/// Every `from` in `text` replaced by `to`.
std::string replaceAll(const std::string &text, const std::string &from,
                       const std::string &to) {
  std::string result;
  size_t copied = 0;
  for (size_t found = text.find(from); !from.empty() && found != std::string::npos;
       found = text.find(from, copied)) {
    result.append(text, copied, found - copied);
    result += to;
    copied = found + from.size();
  }
  result.append(text, copied, std::string::npos);
  return result;
}

std::string joined(const std::vector<std::string> &tokens) {
  std::string text;
  for (const std::string &token : tokens)
    text += token;
  return text;
}

class ByteLevelDecoder : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::string bytes;
    ByteLevelAlphabet::get().unspell(joined(tokens), bytes);
    tokens.assign(1, std::move(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
public:
  MetaspaceDecoder(std::string replacement, bool stripFirstSpace)
      : replacement(std::move(replacement)), stripFirstSpace(stripFirstSpace) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replaceAll(tokens[i], replacement, " ");
      if (i == 0 && stripFirstSpace && !tokens[i].empty() && tokens[i][0] == ' ')
        tokens[i].erase(0, 1);
    }
  }

private:
  std::string replacement;
  bool stripFirstSpace;
};

class ReplaceDecoder : public Decoder {
public:
  ReplaceDecoder(std::string from, std::string to)
      : from(std::move(from)), to(std::move(to)) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens)
      token = replaceAll(token, from, to);
  }

private:
  std::string from;
  std::string to;
};

/// The byte a "<0xNN>" token stands for.
std::optional<unsigned char> byteToken(const std::string &token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
    return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  int high = digit(token[3]), low = digit(token[4]);
  if (high < 0 || low < 0)
    return std::nullopt;
  return static_cast<unsigned char>(high * 16 + low);
}

class ByteFallbackDecoder : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::vector<std::string> result;
    std::string bytes;
    size_t byteCount = 0;
    auto flush = [&] {
      if (byteCount == 0)
        return;
      if (findInvalidUtf8(bytes) == std::string::npos) {
        result.push_back(bytes);
      } else {
        // As Hugging Face: one U+FFFD for each byte of a run that is not
        // UTF-8.
        for (size_t i = 0; i < byteCount; ++i)
          result.push_back("\xef\xbf\xbd");
      }
      bytes.clear();
      byteCount = 0;
    };
    for (std::string &token : tokens) {
      if (std::optional<unsigned char> byte = byteToken(token)) {
        bytes += static_cast<char>(*byte);
        ++byteCount;
        continue;
      }
      flush();
      result.push_back(std::move(token));
    }
    flush();
    tokens = std::move(result);
  }
};

class FuseDecoder : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    tokens.assign(1, joined(tokens));
  }
};

class StripDecoder : public Decoder {
public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content(std::move(content)), start(start), stop(stop) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens) {
      for (size_t i = 0; i < start && token.compare(0, content.size(), content) == 0;
           ++i)
        token.erase(0, content.size());
      for (size_t i = 0; i < stop && token.size() >= content.size() &&
                         token.compare(token.size() - content.size(),
                                       content.size(), content) == 0;
           ++i)
        token.erase(token.size() - content.size());
    }
  }

private:
  std::string content;
  size_t start;
  size_t stop;
};

class SequenceDecoder : public Decoder {
public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps(std::move(steps)) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (const std::unique_ptr<Decoder> &step : steps)
      step->decode(tokens);
  }

private:
  std::vector<std::unique_ptr<Decoder>> steps;
};

size_t countField(const nlohmann::json &component, const std::string &where,
                  const std::string &name) {
  const nlohmann::json &value = requireField(component, where, name);
  if (!value.is_number_unsigned())
    refuseField(where + "." + name, "is not a count (an integer of at least 0)");
  return value.get<size_t>();
}

std::unique_ptr<Decoder> parseMetaspaceDecoder(const nlohmann::json &component,
                                               const std::string &where) {
  bool strip = boolField(component, where, "add_prefix_space", true);
  if (component.contains("prepend_scheme"))
    strip = stringField(component, where, "prepend_scheme") != "never";
  return std::make_unique<MetaspaceDecoder>(
      stringField(component, where, "replacement"), strip);
}

} // namespace

std::unique_ptr<Decoder> parseDecoder(const nlohmann::json &component,
                                      const std::string &where) {
  if (component.is_null())
    return nullptr;
  std::string type = componentType(component, where);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace")
    return parseMetaspaceDecoder(component, where);
  if (type == "Replace") {
    bool isRegex = false;
    std::string pattern = patternField(component, where, isRegex);
    if (isRegex)
      refuseField(where + ".pattern",
                  "a Replace decoder with a regex is not supported; pp "
                  "replaces strings");
    return std::make_unique<ReplaceDecoder>(
        pattern, stringField(component, where, "content"));
  }
  if (type == "ByteFallback")
    return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse")
    return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(
        stringField(component, where, "content"),
        countField(component, where, "start"),
        countField(component, where, "stop"));
  if (type == "Sequence")
    return std::make_unique<SequenceDecoder>(
        parseSteps<Decoder>(component, where, "decoders", parseDecoder));
  refuseField(where, "the decoder \"" + type +
                         "\" is not supported; pp runs ByteLevel, Metaspace, "
                         "Replace, ByteFallback, Fuse, Strip and Sequence of "
                         "them (or none)");
}

} // namespace pp::runtime

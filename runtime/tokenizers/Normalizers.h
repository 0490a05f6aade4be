//===- Normalizers.h - tokenizer.json normalizers ---------------*- C++ -*-===//
//
// The normalizers pp runs, as Hugging Face tokenizers defines them: the
// Unicode normal forms NFC (Qwen2's), NFD, NFKC, NFKD (by ICU), Prepend (a
// prefix before non-empty text), Replace (every match of a string or regex
// by a content) and Sequence of them. LLaMA-2 and Mistral spell spaces as
// "▁" with Sequence[Prepend("▁"), Replace(" ", "▁")].
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_NORMALIZERS_H
#define PP_RUNTIME_TOKENIZERS_NORMALIZERS_H

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>

namespace pp::runtime {

/// Rewrites a text before it is split into words.
class Normalizer {
public:
  virtual ~Normalizer() = default;
  /// Rewrites `text` (UTF-8) in place.
  virtual void normalize(std::string &text) const = 0;
};

/// The normalizer a tokenizer.json describes at `where` ("normalizer"),
/// null for JSON null. Throws TokenizerJsonError for one pp does not run,
/// naming it and the ones it runs.
std::unique_ptr<Normalizer> parseNormalizer(const nlohmann::json &component,
                                            const std::string &where);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_NORMALIZERS_H

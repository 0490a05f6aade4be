//===- PreTokenizers.h - tokenizer.json pre-tokenizers ----------*- C++ -*-===//
//
// The pre-tokenizers pp runs, as Hugging Face tokenizers defines them,
// cut a normalized text into the words the BPE model encodes one by one:
//
//   Split      by a regex or string (PCRE2), the matches Isolated,
//              Removed, MergedWithPrevious, MergedWithNext or Contiguous,
//              optionally inverted (LLaMA 3's and Qwen's regexes)
//   ByteLevel  optionally a space before the text (add_prefix_space) and a
//              split by GPT-2's regex (use_regex), then every byte spelled
//              as its GPT-2 character
//   Metaspace  spaces as the replacement ("▁"), prepended per
//              prepend_scheme (always, first, never), split before each
//              replacement when split is true
//   Sequence   of them, in order
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_PRETOKENIZERS_H
#define PP_RUNTIME_TOKENIZERS_PRETOKENIZERS_H

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// A word, or a piece of text to cut into words.
struct PreToken {
  std::string text;
  /// Whether it starts at the document's first byte (Metaspace's "first").
  bool atStart = false;
};

/// Cuts pieces of text into smaller ones.
class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  /// Replaces `pieces` by their pieces, in order.
  virtual void split(std::vector<PreToken> &pieces) const = 0;
};

/// The pre-tokenizer a tokenizer.json describes at `where`
/// ("pre_tokenizer"), null for JSON null. Throws TokenizerJsonError for
/// one pp does not run, naming it and the ones it runs.
std::unique_ptr<PreTokenizer>
parsePreTokenizer(const nlohmann::json &component, const std::string &where);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_PRETOKENIZERS_H

//===- Decoders.h - tokenizer.json decoders ---------------------*- C++ -*-===//
//
// The decoders that turn token strings back into text (pp-data inspect
// --tokenizer), as Hugging Face tokenizers defines them: ByteLevel (GPT-2
// characters back to bytes), Metaspace, Replace, ByteFallback (<0xNN>
// tokens to bytes), Fuse, Strip and Sequence of them.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_DECODERS_H
#define PP_RUNTIME_TOKENIZERS_DECODERS_H

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace pp::runtime {

/// Rewrites the strings of a token sequence towards its text.
class Decoder {
public:
  virtual ~Decoder() = default;
  /// Rewrites `tokens` in place (a decoder may join them).
  virtual void decode(std::vector<std::string> &tokens) const = 0;
};

/// The decoder a tokenizer.json describes at `where` ("decoder"), null
/// for JSON null. Throws TokenizerJsonError for one pp does not run,
/// naming it and the ones it runs.
std::unique_ptr<Decoder> parseDecoder(const nlohmann::json &component,
                                      const std::string &where);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_DECODERS_H

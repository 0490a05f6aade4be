//===- Documents.h - the documents of pp-data's inputs ----------*- C++ -*-===//
//
// pp-data pack's inputs are text files, each one document, and JSON Lines
// files (named *.jsonl or *.ndjson), each line one JSON object whose text
// field is one document; blank lines are skipped.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TOKENIZERS_DOCUMENTS_H
#define PP_RUNTIME_TOKENIZERS_DOCUMENTS_H

#include <functional>
#include <string>
#include <string_view>

namespace pp::runtime {

/// Where a document comes from, for messages.
struct DocumentPlace {
  const std::string &path;
  /// The JSON Lines line (from 1); 0 for a text file.
  size_t line;
};

/// Whether `path` is read as JSON Lines (by its name).
bool isJsonLines(const std::string &path);

/// Calls `document` with each document of the input `path`: the whole
/// file, or each JSON Lines record's string field `textField`. Throws
/// std::runtime_error for a file that cannot be read ("cannot read the
/// input 'PATH': REASON") and for a line that is not JSON, not an object,
/// lacks the field or holds no string there, naming the file and line and
/// what to pass or fix.
void forEachDocument(
    const std::string &path, const std::string &textField,
    const std::function<void(std::string_view, const DocumentPlace &)>
        &document);

} // namespace pp::runtime

#endif // PP_RUNTIME_TOKENIZERS_DOCUMENTS_H

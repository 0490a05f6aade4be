//===- Documents.cpp - the documents of pp-data's inputs ------------------===//

#include "runtime/tokenizers/Documents.h"

#include "runtime/core/InputFile.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {
namespace {

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string readInput(const std::string &path) {
  return readInputFile(path, "the input");
}

/// The names of `record`'s fields, for the message about a missing one.
std::string fieldNames(const nlohmann::json &record) {
  std::string names;
  for (const auto &item : record.items())
    names += (names.empty() ? "" : ", ") + item.key();
  return names.empty() ? "none" : names;
}

void forEachRecord(
    const std::string &path, const std::string &content,
    const std::string &textField,
    const std::function<void(std::string_view, const DocumentPlace &)>
        &document) {
  size_t lineNumber = 0;
  for (size_t start = 0; start < content.size();) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos)
      end = content.size();
    std::string_view line(content.data() + start, end - start);
    start = end + 1;
    ++lineNumber;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    std::string where = path + ":" + std::to_string(lineNumber);
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception &failure) {
      throw std::runtime_error(
          where + ": not a JSON object (" + failure.what() +
          "); each line of a JSON Lines file is one JSON object, such as "
          "{\"" + textField + "\": \"...\"}");
    }
    if (!record.is_object())
      throw std::runtime_error(where + ": the record is a JSON " +
                               std::string(record.type_name()) +
                               ", not an object; each line of a JSON Lines "
                               "file is one object, such as {\"" +
                               textField + "\": \"...\"}");
    auto text = record.find(textField);
    if (text == record.end())
      throw std::runtime_error(
          where + ": the record has no field \"" + textField +
          "\" (its fields: " + fieldNames(record) +
          "); pass --text-field NAME to name the field that holds the text");
    if (!text->is_string())
      throw std::runtime_error(where + ": the field \"" + textField +
                               "\" is a JSON " + text->type_name() +
                               ", not a string; the text field holds each "
                               "document's text");
    const std::string &value = text->get_ref<const std::string &>();
    document(value, DocumentPlace{path, lineNumber});
  }
}

} // namespace

bool isJsonLines(const std::string &path) {
  return endsWith(path, ".jsonl") || endsWith(path, ".ndjson");
}

void forEachDocument(
    const std::string &path, const std::string &textField,
    const std::function<void(std::string_view, const DocumentPlace &)>
        &document) {
  std::string content = readInput(path);
  if (isJsonLines(path))
    forEachRecord(path, content, textField, document);
  else
    document(content, DocumentPlace{path, 0});
}

} // namespace pp::runtime

//===- SafeTensors.cpp - tensors by name, safetensors format --------------===//

#include "runtime/checkpoints/SafeTensors.h"

#include "runtime/core/ElementTypes.h"
#include "runtime/core/InputFile.h"
#include "runtime/core/Sha256.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>

namespace pp::runtime {
namespace {

constexpr char kMetadataKey[] = "__metadata__";

/// Bytes per element of each byte-sized dtype the format defines; 0 for
/// any other name (the sub-byte F4 and F6 types included).
uint64_t dtypeBytes(const std::string &dtype) {
  static const std::map<std::string, uint64_t> sizes = {
      {"BOOL", 1},    {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},     {"BF16", 2},
      {"I32", 4},     {"U32", 4}, {"F32", 4}, {"I64", 8},     {"U64", 8},
      {"F64", 8},     {"C64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

/// Bytes per element of a dtype SafeTensorsWriter writes (F32, and BF16
/// and F16 rounded from f32); 0 for another.
size_t writtenElementSize(const std::string &dtype) {
  return dtype == "F32" ? 4 : dtype == "BF16" || dtype == "F16" ? 2 : 0;
}

/// Reads `count` little-endian values of type `Stored` at `data` as floats
/// into `out`, each through `convert`.
template <typename Stored, typename Convert>
void convertEach(const char *data, size_t count, float *out,
                 Convert convert) {
  for (size_t i = 0; i < count; ++i) {
    Stored value;
    std::memcpy(&value, data + sizeof(Stored) * i, sizeof(value));
    out[i] = convert(value);
  }
}

/// Converts `count` little-endian values of `dtype` (convertsToF32) at
/// `data` to `out`.
void convertToF32(const std::string &dtype, const char *data, size_t count,
                  float *out) {
  if (count == 0)
    return; // `out` may be null for an empty tensor.
  if (dtype == "F32")
    std::memcpy(out, data, count * sizeof(float));
  else if (dtype == "F64")
    convertEach<double>(data, count, out,
                        [](double value) { return static_cast<float>(value); });
  else if (dtype == "F16")
    convertEach<uint16_t>(data, count, out,
                          [](uint16_t bits) { return toFloat(Half{bits}); });
  else // BF16
    convertEach<uint16_t>(data, count, out, [](uint16_t bits) {
      return toFloat(BFloat16{bits});
    });
}

/// Parses `text` as JSON, refusing a key repeated within one object
/// (nlohmann keeps the last silently).
nlohmann::json parseRefusingRepeatedKeys(const std::string &text,
                                         std::string &repeated) {
  std::vector<std::set<std::string>> open;
  auto callback = [&](int, nlohmann::json::parse_event_t event,
                      nlohmann::json &parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start)
      open.emplace_back();
    else if (event == Event::object_end && !open.empty())
      open.pop_back();
    else if (event == Event::key && !open.empty() &&
             !open.back().insert(parsed.get<std::string>()).second &&
             repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  return nlohmann::json::parse(text, callback);
}

/// The location of tensor `name` (of the file at
/// `path`) in `located`; throws when there is none.
const std::pair<size_t, size_t> &
locate(const std::map<std::string, std::pair<size_t, size_t>> &located,
       const std::string &path, const std::string &name) {
  auto it = located.find(name);
  if (it == located.end())
    throw std::runtime_error("safetensors file '" + path + "' has no tensor '" +
                             name + "'");
  return it->second;
}

} // namespace

bool convertsToF32(const std::string &dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16" ||
         dtype == "F64";
}

SafeTensorsWriter::SafeTensorsWriter(
    const std::string &path, const std::vector<TensorEntry> &entries,
    const std::map<std::string, std::string> &metadata)
    : path(path), entries(entries), meta(metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty())
    header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const TensorEntry &entry : entries) {
    if (entry.name == kMetadataKey || header.contains(entry.name))
      throw std::runtime_error("cannot write the safetensors file '" + path +
                               "': the tensor name '" + entry.name +
                               "' is repeated or reserved");
    size_t size = writtenElementSize(entry.dtype);
    if (!size)
      throw std::runtime_error("cannot write the safetensors file '" + path +
                               "': the tensor '" + entry.name + "' is " +
                               entry.dtype + "; pp writes F32, BF16 and F16");
    uint64_t bytes = static_cast<uint64_t>(numElements(entry.shape)) * size;
    header[entry.name] = {{"dtype", entry.dtype},
                          {"shape", entry.shape},
                          {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // The data starts at a multiple of 8, as the format recommends.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t length = text.size();
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<unsigned char>(length >> (8 * i));
  file = std::make_unique<OutputFile>(path, OutputFile::Visibility::AtCommit,
                                      "the safetensors file");
  file->write(prefix, sizeof(prefix));
  file->write(text);
}

SafeTensorsWriter::~SafeTensorsWriter() = default;

void SafeTensorsWriter::add(const std::string &name, const float *values) {
  if (next == entries.size() || entries[next].name != name)
    throw std::runtime_error(
        "safetensors file '" + path + "': got the values of '" + name +
        "', expected " +
        (next == entries.size() ? "none" : "'" + entries[next].name + "'"));
  int64_t count = numElements(entries[next].shape);
  if (entries[next].dtype == "F32") {
    size_t bytes = static_cast<size_t>(count) * sizeof(float);
    file->write(values, bytes);
    tensorDigests[name] = sha256Hex(values, bytes);
  } else {
    // BF16 or F16: each value rounded to nearest even.
    bool brain = entries[next].dtype == "BF16";
    std::vector<uint16_t> narrow(count);
    for (int64_t i = 0; i < count; ++i)
      narrow[i] =
          brain ? toBFloat16(values[i]).bits : toHalf(values[i]).bits;
    size_t bytes = narrow.size() * sizeof(uint16_t);
    file->write(narrow.data(), bytes);
    tensorDigests[name] = sha256Hex(narrow.data(), bytes);
  }
  ++next;
}

void SafeTensorsWriter::finish() {
  if (next != entries.size())
    throw std::runtime_error("safetensors file '" + path +
                             "': finished without the values of '" +
                             entries[next].name + "'");
  file->commit();
  file.reset();
}

SafeTensorsFile SafeTensorsFile::open(const std::string &path) {
  auto refuse = [&](const std::string &what) -> std::runtime_error {
    return std::runtime_error("safetensors file '" + path + "': " + what);
  };
  SafeTensorsFile file;
  file.filePath = path;
  InputFile input = InputFile::open(path, "the safetensors file");
  size_t size = static_cast<size_t>(input.size());
  if (size < 8)
    throw refuse("it holds " + std::to_string(size) +
                 " bytes, fewer than the 8 of the header length");
  file.mapped = MappedFile(input.fd(), size, path, "the safetensors file");
  const unsigned char *bytes = file.mapped.data();
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (length > size - 8)
    throw refuse("the header length " + std::to_string(length) +
                 " runs past the end of the file (" + std::to_string(size) +
                 " bytes); the file is truncated or not safetensors");
  std::string repeated;
  nlohmann::json header;
  try {
    header = parseRefusingRepeatedKeys(
        std::string(reinterpret_cast<const char *>(bytes) + 8, length),
        repeated);
  } catch (const nlohmann::json::exception &e) {
    throw refuse(std::string("the header is not JSON: ") + e.what());
  }
  if (!header.is_object())
    throw refuse("the header is not a JSON object");
  if (!repeated.empty())
    throw refuse("the header repeats the key '" + repeated + "'");
  size_t dataStart = 8 + length;
  uint64_t dataBytes = size - dataStart;
  // Per tensor: [begin, end) in the data and its name.
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;
  for (const auto &[name, entry] : header.items()) {
    if (name == kMetadataKey) {
      if (!entry.is_object())
        throw refuse("__metadata__ is not an object");
      for (const auto &[key, value] : entry.items()) {
        if (!value.is_string())
          throw refuse("__metadata__ entry '" + key + "' is not a string");
        file.meta[key] = value.get<std::string>();
      }
      continue;
    }
    std::string quoted = "tensor '" + name + "'";
    if (!entry.is_object() || entry.size() != 3 || !entry.contains("dtype") ||
        !entry.contains("shape") || !entry.contains("data_offsets"))
      throw refuse(quoted + " is not an object of exactly dtype, shape and "
                            "data_offsets");
    const nlohmann::json &dtype = entry["dtype"];
    uint64_t elementBytes =
        dtype.is_string() ? dtypeBytes(dtype.get<std::string>()) : 0;
    if (elementBytes == 0)
      throw refuse(quoted + " has dtype " + dtype.dump() +
                   ", which pp does not know (it reads the format's "
                   "byte-sized dtypes: BOOL, U8 to U64, I8 to I64, F8_*, "
                   "F16, BF16, F32, F64, C64)");
    const nlohmann::json &dims = entry["shape"];
    if (!dims.is_array())
      throw refuse(quoted + " has a shape that is not an array");
    TensorEntry tensor{name, {}, dtype.get<std::string>()};
    uint64_t count = 1;
    for (const nlohmann::json &dim : dims) {
      if (!dim.is_number_unsigned() ||
          dim.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        throw refuse(quoted + " has the dimension " + dim.dump() +
                     ", not a non-negative integer");
      tensor.shape.push_back(dim.get<int64_t>());
      if (__builtin_mul_overflow(count, dim.get<uint64_t>(), &count) ||
          count > dataBytes)
        count = UINT64_MAX;
    }
    const nlohmann::json &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw refuse(quoted + " has data_offsets " + offsets.dump() +
                   ", not two non-negative integers");
    uint64_t begin = offsets[0].get<uint64_t>();
    uint64_t end = offsets[1].get<uint64_t>();
    if (begin > end || end > dataBytes)
      throw refuse(quoted + " has data_offsets [" + std::to_string(begin) +
                   ", " + std::to_string(end) + "] outside the " +
                   std::to_string(dataBytes) +
                   " data bytes of the file; it is truncated or corrupt "
                   "(an interrupted download?): fetch or write it again");
    if (count == UINT64_MAX || end - begin != count * elementBytes)
      throw refuse(quoted + " of shape " + formatShape(tensor.shape) + " " +
                   tensor.dtype + " needs " +
                   (count == UINT64_MAX
                        ? std::string("more")
                        : std::to_string(count * elementBytes)) +
                   " bytes but its data_offsets span " +
                   std::to_string(end - begin));
    ranges.emplace_back(begin, end, name);
    file.tensors.push_back(std::move(tensor));
  }
  // The data must be exactly the tensors', back to back in some order.
  std::vector<size_t> order(file.tensors.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranges[a] < ranges[b];
  });
  uint64_t covered = 0;
  std::vector<TensorEntry> byOffset;
  for (size_t i : order) {
    const auto &[begin, end, name] = ranges[i];
    if (begin != covered)
      throw refuse("tensor '" + name + "' starts at data byte " +
                   std::to_string(begin) +
                   ", but the tensors before it end at " +
                   std::to_string(covered) +
                   (begin < covered ? " (they overlap)" : " (a hole)"));
    file.located[name] = {byOffset.size(), dataStart + begin};
    byOffset.push_back(file.tensors[i]);
    covered = end;
  }
  if (covered != dataBytes)
    throw refuse("the tensors' data ends at byte " + std::to_string(covered) +
                 " of the " + std::to_string(dataBytes) +
                 " data bytes: the file has trailing bytes");
  file.tensors = std::move(byOffset);
  return file;
}

SafeTensorsFile::SafeTensorsFile(SafeTensorsFile &&other) noexcept {
  *this = std::move(other);
}

SafeTensorsFile &SafeTensorsFile::operator=(SafeTensorsFile &&other) noexcept {
  if (this != &other) {
    filePath = std::move(other.filePath);
    tensors = std::move(other.tensors);
    located = std::move(other.located);
    meta = std::move(other.meta);
    mapped = std::move(other.mapped);
  }
  return *this;
}

SafeTensorsFile::~SafeTensorsFile() = default;

const TensorEntry *SafeTensorsFile::find(const std::string &name) const {
  auto it = located.find(name);
  return it == located.end() ? nullptr : &tensors[it->second.first];
}

std::string_view SafeTensorsFile::bytes(const std::string &name) const {
  const auto &[index, start] = locate(located, filePath, name);
  const TensorEntry &entry = tensors[index];
  size_t size =
      static_cast<size_t>(numElements(entry.shape)) * dtypeBytes(entry.dtype);
  return {reinterpret_cast<const char *>(mapped.data()) + start, size};
}

std::string SafeTensorsFile::sha256(const std::string &name) const {
  std::string_view stored = bytes(name);
  return sha256Hex(stored.data(), stored.size());
}

void SafeTensorsFile::read(const std::string &name, float *out) const {
  const auto &[index, start] = locate(located, filePath, name);
  const TensorEntry &entry = tensors[index];
  if (!convertsToF32(entry.dtype))
    throw std::runtime_error(
        "safetensors file '" + filePath + "': tensor '" + name + "' is " +
        entry.dtype + ", which pp cannot convert to the model's f32 (it "
        "converts F32, F16, BF16 and F64)");
  convertToF32(entry.dtype,
               reinterpret_cast<const char *>(mapped.data()) + start,
               static_cast<size_t>(numElements(entry.shape)), out);
}

} // namespace pp::runtime

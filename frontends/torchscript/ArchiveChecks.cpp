//===- ArchiveChecks.cpp - a TorchScript archive's bytes are whole --------===//
//
// The zip reader reads what the central directory and the local headers say
// (zip64 included, as miniz writes it past 4 GiB) from the memory-mapped
// file, so that even large archives are checked without a copy.
//
//===----------------------------------------------------------------------===//

#include "frontends/torchscript/ArchiveChecks.h"
#include "frontends/torchscript/PickleChecks.h"

#include "runtime/core/InputFile.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <zlib.h>

#include <functional>

using namespace llvm;

namespace pp::torchscript_frontend {
namespace {

/// What every error about the archive's bytes says of the file.
constexpr StringLiteral kCorrupt =
    "the file is corrupt or cut short (a broken download or copy)";

/// The little-endian T at `offset` of `bytes`, or nullopt past its end.
template <typename T>
std::optional<T> readLE(StringRef bytes, uint64_t offset) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    return std::nullopt;
  return support::endian::read<T, endianness::little>(bytes.data() + offset);
}

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndLocatorSignature = 0x07064b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr uint16_t kZip64ExtraId = 0x0001;

/// One entry of the central directory.
struct Entry {
  std::string name;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0;
  uint64_t size = 0;
  uint64_t localOffset = 0;
};

/// The CRC-32 of `data`, continuing `crc`.
uint32_t crc32Of(uint32_t crc, StringRef data) {
  while (!data.empty()) {
    size_t chunk = std::min<size_t>(data.size(), 1u << 30);
    crc = ::crc32(crc, reinterpret_cast<const Bytef *>(data.data()),
                  static_cast<uInt>(chunk));
    data = data.drop_front(chunk);
  }
  return crc;
}

/// The CRC-32 and size of `data` inflated (raw deflate, zip method 8), or
/// an error.
std::string inflateCrc(StringRef data, uint32_t &crc, uint64_t &size) {
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return "zlib cannot start inflating";
  std::vector<Bytef> out(1 << 16);
  crc = ::crc32(0, nullptr, 0);
  size = 0;
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (stream.avail_in == 0) {
      size_t consumed = stream.next_in - reinterpret_cast<const Bytef *>(
                                             data.data());
      stream.avail_in = static_cast<uInt>(
          std::min<size_t>(data.size() - consumed, 1u << 30));
    }
    stream.next_out = out.data();
    stream.avail_out = static_cast<uInt>(out.size());
    status = inflate(&stream, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      inflateEnd(&stream);
      return "its deflated bytes do not inflate";
    }
    size_t produced = out.size() - stream.avail_out;
    crc = ::crc32(crc, out.data(), static_cast<uInt>(produced));
    size += produced;
    if (status == Z_OK && produced == 0 && stream.avail_in == 0) {
      inflateEnd(&stream);
      return "its deflated bytes end early";
    }
  }
  inflateEnd(&stream);
  return "";
}

/// The entries of the central directory of `file`, or an error ("" and no
/// entries when `file` has no end of central directory: no zip archive).
std::string readCentralDirectory(StringRef file, std::vector<Entry> &entries) {
  // The end of central directory record: 22 bytes and a comment of at most
  // 65535 bytes at the end of the file.
  if (file.size() < 22)
    return "";
  uint64_t end = file.size() - 22;
  uint64_t lowest = end > 0xffff ? end - 0xffff : 0;
  while (readLE<uint32_t>(file, end) != kEndSignature) {
    if (end == lowest)
      return "";
    --end;
  }
  uint64_t count = *readLE<uint16_t>(file, end + 10);
  uint64_t offset = *readLE<uint32_t>(file, end + 16);
  if (end >= 20 && readLE<uint32_t>(file, end - 20) ==
                       kZip64EndLocatorSignature) {
    std::optional<uint64_t> record = readLE<uint64_t>(file, end - 12);
    std::optional<uint64_t> wideCount, wideOffset;
    if (record && readLE<uint32_t>(file, *record) == kZip64EndSignature) {
      wideCount = readLE<uint64_t>(file, *record + 32);
      wideOffset = readLE<uint64_t>(file, *record + 48);
    }
    if (!wideCount || !wideOffset)
      return "its zip64 end of central directory is missing";
    count = *wideCount;
    offset = *wideOffset;
  }
  for (uint64_t i = 0; i < count; ++i) {
    // The fixed part of an entry is 46 bytes.
    if (readLE<uint32_t>(file, offset) != kCentralSignature ||
        file.size() - offset < 46)
      return "its central directory is cut short (entry " + std::to_string(i) +
             " of " + std::to_string(count) + " is missing)";
    std::optional<uint16_t> nameSize = readLE<uint16_t>(file, offset + 28);
    std::optional<uint16_t> extraSize = readLE<uint16_t>(file, offset + 30);
    std::optional<uint16_t> commentSize = readLE<uint16_t>(file, offset + 32);
    uint64_t next = offset + 46 + *nameSize + *extraSize + *commentSize;
    if (next > file.size())
      return "its central directory is cut short";
    Entry entry;
    entry.name = file.substr(offset + 46, *nameSize).str();
    entry.method = *readLE<uint16_t>(file, offset + 10);
    entry.crc = *readLE<uint32_t>(file, offset + 16);
    entry.compressedSize = *readLE<uint32_t>(file, offset + 20);
    entry.size = *readLE<uint32_t>(file, offset + 24);
    entry.localOffset = *readLE<uint32_t>(file, offset + 42);
    // A zip64 extra field holds the 64-bit values of the fields that read
    // 0xffffffff, in this order.
    StringRef extra = file.substr(offset + 46 + *nameSize, *extraSize);
    while (extra.size() >= 4) {
      uint16_t id = *readLE<uint16_t>(extra, 0);
      uint16_t size = *readLE<uint16_t>(extra, 2);
      StringRef field = extra.substr(4, size);
      extra = extra.drop_front(std::min<size_t>(extra.size(), 4u + size));
      if (id != kZip64ExtraId)
        continue;
      uint64_t at = 0;
      for (uint64_t *value :
           {&entry.size, &entry.compressedSize, &entry.localOffset}) {
        if (*value != 0xffffffff)
          continue;
        std::optional<uint64_t> wide = readLE<uint64_t>(field, at);
        if (!wide)
          return "the zip64 field of entry '" + entry.name + "' is cut short";
        *value = *wide;
        at += 8;
      }
    }
    entries.push_back(std::move(entry));
    offset = next;
  }
  return "";
}

/// Checks one entry's bytes against its CRC-32 and size.
std::string checkEntry(StringRef file, const Entry &entry) {
  std::string where = "zip entry '" + entry.name + "'";
  std::optional<uint16_t> nameSize =
      readLE<uint16_t>(file, entry.localOffset + 26);
  std::optional<uint16_t> extraSize =
      readLE<uint16_t>(file, entry.localOffset + 28);
  if (readLE<uint32_t>(file, entry.localOffset) != kLocalSignature ||
      !nameSize || !extraSize)
    return where + " has no local header where the central directory puts it";
  uint64_t data = entry.localOffset + 30 + *nameSize + *extraSize;
  if (data > file.size() || file.size() - data < entry.compressedSize)
    return where + " (" + std::to_string(entry.compressedSize) +
           " bytes) lies past the end of the file";
  StringRef bytes = file.substr(data, entry.compressedSize);
  uint32_t crc = 0;
  uint64_t size = 0;
  if (entry.method == 0) {
    crc = crc32Of(::crc32(0, nullptr, 0), bytes);
    size = bytes.size();
  } else if (entry.method == 8) {
    std::string error = inflateCrc(bytes, crc, size);
    if (!error.empty())
      return where + ": " + error;
  } else {
    return where + " uses zip compression method " +
           std::to_string(entry.method) +
           ", which LibTorch does not read (torch.jit.save and torch.export.save "
           "store entries)";
  }
  if (size != entry.size)
    return where + " holds " + std::to_string(size) +
           " bytes; the central directory says " + std::to_string(entry.size);
  if (crc != entry.crc) {
    std::string message;
    raw_string_ostream os(message);
    os << where << " fails its CRC-32 check (the central directory records "
       << format_hex(entry.crc, 10) << ", its bytes give "
       << format_hex(crc, 10) << ")";
    return message;
  }
  if (entry.method == 0 && StringRef(entry.name).ends_with(".pkl"))
    if (std::string problem = checkPickleLengths(bytes); !problem.empty())
      return where + ": " + problem;
  return "";
}

/// The dtype and sizes of `tensor`, as in `float32 [4, 6]`.
std::string describe(const at::Tensor &tensor) {
  std::string text = c10::toString(tensor.scalar_type());
  text += " [";
  for (int64_t i = 0; i < tensor.dim(); ++i)
    text += (i ? ", " : "") + std::to_string(tensor.size(i));
  return text + "]";
}

} // namespace

std::string checkZipEntries(StringRef path, StringRef kind,
                            StringRef remedy) {
  // LibTorch would wait on a FIFO and read a device without end.
  if (std::string problem =
          runtime::inputFileProblem(path.str(), "the " + kind.str());
      !problem.empty() && llvm::sys::fs::exists(path))
    return problem;
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(
      path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return ""; // LibTorch reports a file it cannot open.
  StringRef file = (*buffer)->getBuffer();
  std::vector<Entry> entries;
  std::string error = readCentralDirectory(file, entries);
  for (const Entry &entry : entries) {
    if (!error.empty())
      break;
    error = checkEntry(file, entry);
  }
  if (error.empty())
    return "";
  return ("the " + kind + " is damaged: " + error + "; " + kCorrupt + ": " +
          remedy)
      .str();
}

size_t RecordingReader::read(uint64_t pos, void *buf, size_t n,
                             const char *what) const {
  size_t read = file.read(pos, buf, n, what);
  reads[buf] = read;
  return read;
}

std::optional<uint64_t>
RecordingReader::bytesReadInto(const void *data) const {
  auto it = reads.find(data);
  if (it == reads.end())
    return std::nullopt;
  return it->second;
}

std::string checkTensorExtent(const at::Tensor &tensor, StringRef what,
                              const RecordingReader &reader) {
  // Only strided CPU tensors with elements read their storage's bytes.
  if (!tensor.defined() || tensor.layout() != at::kStrided ||
      !tensor.device().is_cpu() || tensor.numel() == 0)
    return "";
  // The lowest and highest elements the tensor reaches.
  int64_t lowest = tensor.storage_offset();
  int64_t highest = lowest;
  bool overflow = false;
  for (int64_t i = 0; i < tensor.dim(); ++i) {
    int64_t reach = 0;
    overflow |= MulOverflow(tensor.size(i) - 1, tensor.stride(i), reach);
    int64_t &bound = reach < 0 ? lowest : highest;
    overflow |= AddOverflow(bound, reach, bound);
  }
  int64_t needed = 0;
  overflow |= MulOverflow(highest + 1, static_cast<int64_t>(tensor.itemsize()),
                          needed);
  // An empty record leaves no buffer; a short one a buffer shorter than
  // data.pkl claims.
  const c10::Storage &storage = tensor.storage();
  uint64_t held = storage.data() ? storage.nbytes() : 0;
  if (std::optional<uint64_t> read = reader.bytesReadInto(storage.data()))
    held = std::min<uint64_t>(held, *read);
  if (!overflow && lowest >= 0 && static_cast<uint64_t>(needed) <= held)
    return "";
  std::string message;
  raw_string_ostream os(message);
  os << "tensor '" << what << "' (" << describe(tensor) << ", offset "
     << tensor.storage_offset() << ", strides [";
  for (int64_t i = 0; i < tensor.dim(); ++i)
    os << (i ? ", " : "") << tensor.stride(i);
  os << "]) reaches ";
  if (overflow || lowest < 0)
    os << "outside its storage";
  else
    os << needed << " bytes into its storage, of which the archive holds "
       << held;
  os << "; " << kCorrupt
     << ": save the module again with torch.jit.save, or copy it again";
  return message;
}

std::string checkModuleTensors(const torch::jit::Module &module,
                               const RecordingReader &reader) {
  DenseSet<const void *> visited;
  std::function<std::string(const c10::IValue &, const std::string &)> walk =
      [&](const c10::IValue &value, const std::string &path) -> std::string {
    if (value.isTensor())
      return checkTensorExtent(value.toTensor(), path, reader);
    if (value.isObject()) {
      const c10::ivalue::Object &object = *value.toObject();
      if (!visited.insert(&object).second)
        return "";
      for (size_t i = 0, e = object.type()->numAttributes(); i < e; ++i) {
        const std::string &name = object.type()->getAttributeName(i);
        std::string error =
            walk(object.getSlot(i), path.empty() ? name : path + "." + name);
        if (!error.empty())
          return error;
      }
      return "";
    }
    auto walkEach = [&](auto &&elements) -> std::string {
      size_t index = 0;
      for (const c10::IValue &element : elements) {
        std::string error =
            walk(element, path + "[" + std::to_string(index++) + "]");
        if (!error.empty())
          return error;
      }
      return "";
    };
    if (value.isList())
      return walkEach(value.toListRef());
    if (value.isTuple())
      return walkEach(value.toTupleRef().elements());
    if (value.isGenericDict())
      for (const auto &entry : value.toGenericDict()) {
        const c10::IValue &key = entry.key();
        std::string name = key.isString() ? "'" + key.toStringRef() + "'"
                           : key.isInt()  ? std::to_string(key.toInt())
                                          : "a " + key.tagKind() + " key";
        std::string error = walk(entry.value(), path + "[" + name + "]");
        if (!error.empty())
          return error;
      }
    return "";
  };
  std::string error = walk(module._ivalue(), "");
  // The tensor constants of the code (constants.pkl), in every function of
  // the module's compilation unit.
  std::function<std::string(torch::jit::Block *)> walkBlock =
      [&](torch::jit::Block *block) -> std::string {
    for (torch::jit::Node *node : block->nodes()) {
      for (torch::jit::Block *nested : node->blocks())
        if (std::string error = walkBlock(nested); !error.empty())
          return error;
      if (node->kind() != c10::prim::Constant ||
          !node->output()->type()->cast<c10::TensorType>())
        continue;
      std::string where = "a constant of the module's code";
      if (auto position = node->sourceRange().file_line_col())
        where += " at " + std::get<0>(*position) + ":" +
                 std::to_string(std::get<1>(*position));
      if (std::string error =
              checkTensorExtent(node->t(torch::jit::attr::value), where,
                                reader);
          !error.empty())
        return error;
    }
    return "";
  };
  for (torch::jit::Function *function :
       module._ivalue()->compilation_unit()->get_functions())
    if (error.empty() && function->isGraphFunction())
      error = walkBlock(torch::jit::toGraphFunction(*function).graph()->block());
  return error;
}

} // namespace pp::torchscript_frontend

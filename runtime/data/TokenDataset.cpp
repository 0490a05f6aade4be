//===- TokenDataset.cpp - memory-mapped token files -----------------------===//

#include "runtime/data/TokenDataset.h"

#include "runtime/core/OutputFile.h"
#include "runtime/core/FileDescriptor.h"
#include "runtime/core/Sha256.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

namespace pp::runtime {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token files are little-endian and read in place");

constexpr char kMagic[] = {'P', 'P', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint32_t kVersion = 1;

// Byte offsets of the header's fields (TokenDataset.h draws the layout).
constexpr size_t kVersionOffset = 8;
constexpr size_t kWidthOffset = 12;
constexpr size_t kCountOffset = 16;
constexpr size_t kDocumentsOffset = 24;
constexpr size_t kVocabularyOffset = 32;
constexpr size_t kMaxTokenOffset = 36;
constexpr size_t kChecksumOffset = 40;
constexpr size_t kChecksumBytes = 32;
static_assert(kChecksumOffset + kChecksumBytes == kTokenDatasetHeaderBytes);

constexpr char kRepack[] = "re-pack it with pp-data pack";

template <typename T> T load(const unsigned char *bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

template <typename T> void store(unsigned char *bytes, T value) {
  std::memcpy(bytes, &value, sizeof(value));
}

/// Throws what is wrong with the token file `path`.
[[noreturn]] void refuse(const std::string &path, const std::string &message) {
  throw std::runtime_error("token dataset '" + path + "': " + message);
}

std::string str(uint64_t value) { return std::to_string(value); }

/// Calls `body` with a value of the unsigned type `width` bytes wide.
template <typename Body> decltype(auto) withTokenType(int width, Body body) {
  if (width == 2)
    return body(uint16_t());
  return body(uint32_t());
}

/// The largest of the `count` tokens at `bytes`.
template <typename T>
uint32_t largestToken(const unsigned char *bytes, int64_t count) {
  T largest = 0;
  for (int64_t i = 0; i < count; ++i)
    largest = std::max(largest, load<T>(bytes + i * sizeof(T)));
  return largest;
}

/// What a token file's first bytes and size say, before any token is read.
struct FileLayout {
  /// pp's format: a header, then the tokens.
  bool packed = false;
  int width = 0;
  int64_t count = 0;
  /// The header's fields (pp format), its checksum not yet verified.
  TokenDatasetHeader header;
  uint32_t recordedLargest = 0;
  std::string recordedChecksum;
};

/// Opens `path` into `fd` and returns its size: a regular file's, not
/// empty.
size_t openRegularFile(const std::string &path, FileDescriptor &fd) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  fd = FileDescriptor(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0)
    refuse(path, std::string("cannot open it: ") + std::strerror(errno));
  struct stat status;
  if (::fstat(fd.get(), &status) != 0)
    refuse(path, std::string("cannot stat it: ") + std::strerror(errno));
  if (S_ISDIR(status.st_mode))
    refuse(path, "it is a directory; name the token file in it");
  if (!S_ISREG(status.st_mode))
    refuse(path, "it is not a regular file");
  if (status.st_size == 0)
    refuse(path, "the file is empty; pack a non-empty text with pp-data pack");
  return static_cast<size_t>(status.st_size);
}

/// Checks the header of the pp token dataset `path` at `bytes` (at least
/// kTokenDatasetHeaderBytes of them) against the file's size `fileBytes`.
void readHeader(const std::string &path, const unsigned char *bytes,
                size_t fileBytes, FileLayout &layout) {
  TokenDatasetHeader &header = layout.header;
  header.version = load<uint32_t>(bytes + kVersionOffset);
  if (header.version != kVersion)
    refuse(path, "byte " + str(kVersionOffset) + ": format version " +
                     str(header.version) + " is not one this pp reads (" +
                     str(kVersion) + "); " + kRepack);
  uint32_t width = load<uint32_t>(bytes + kWidthOffset);
  if (width != 2 && width != 4)
    refuse(path, "byte " + str(kWidthOffset) + ": the token width " +
                     str(width) +
                     " is neither 2 nor 4 (the header is "
                     "corrupt); " +
                     kRepack);
  layout.width = static_cast<int>(width);

  uint64_t count = load<uint64_t>(bytes + kCountOffset);
  uint64_t payload = fileBytes - kTokenDatasetHeaderBytes;
  if (count > payload / width)
    refuse(path, "the header (byte " + str(kCountOffset) + ") records " +
                     str(count) + " tokens of " + str(width) +
                     " bytes, but the file of " + str(fileBytes) +
                     " bytes is truncated at token " + str(payload / width) +
                     " (byte " +
                     str(kTokenDatasetHeaderBytes + payload / width * width) +
                     "); copy it again or " + kRepack);
  uint64_t end = kTokenDatasetHeaderBytes + count * width;
  if (end != fileBytes)
    refuse(path, "the header (byte " + str(kCountOffset) + ") records " +
                     str(count) + " tokens of " + str(width) + " bytes, but " +
                     str(fileBytes - end) +
                     " more bytes follow the last token, from byte " +
                     str(end) + "; copy it again or " + kRepack);
  if (count == 0)
    refuse(path, "byte " + str(kCountOffset) +
                     ": the dataset holds no tokens; pack a non-empty text "
                     "with pp-data pack");
  layout.count = static_cast<int64_t>(count);

  uint64_t documents = load<uint64_t>(bytes + kDocumentsOffset);
  if (documents > count)
    refuse(path, "byte " + str(kDocumentsOffset) + ": " + str(documents) +
                     " documents cannot hold " + str(count) +
                     " tokens (each ends with a token; the header is "
                     "corrupt); " +
                     kRepack);
  header.documents = static_cast<int64_t>(documents);
  header.vocabulary = load<uint32_t>(bytes + kVocabularyOffset);
  layout.recordedLargest = load<uint32_t>(bytes + kMaxTokenOffset);
  if (layout.recordedLargest >= header.vocabulary)
    refuse(path, "byte " + str(kVocabularyOffset) + ": the largest token " +
                     str(layout.recordedLargest) +
                     " is outside the declared vocabulary of " +
                     str(header.vocabulary) +
                     " tokens (the header is corrupt); " + kRepack);
  layout.recordedChecksum = hexDigits(bytes + kChecksumOffset, kChecksumBytes);
}

/// The layout of the token file `path` of `fileBytes` bytes, whose first
/// min(fileBytes, kTokenDatasetHeaderBytes) bytes are at `start`, opened
/// with `tokenWidth` as TokenDataset::open takes it. Checks everything
/// but the tokens themselves.
FileLayout readLayout(const std::string &path, const unsigned char *start,
                      size_t fileBytes, int tokenWidth) {
  bool startsWithMagic =
      std::memcmp(start, kMagic, std::min(fileBytes, sizeof(kMagic))) == 0 &&
      (tokenWidth == 0 || fileBytes >= sizeof(kMagic));
  if (!startsWithMagic && tokenWidth == 0)
    refuse(path, "byte 0: not a pp token dataset (it does not start with "
                 "\"PPTOKENS\"); for a flat file of uint16 or uint32 tokens "
                 "(nanoGPT's train.bin) pass --token-width 2|4, else pack "
                 "text with pp-data pack");
  FileLayout layout;
  if (startsWithMagic) {
    if (fileBytes < kTokenDatasetHeaderBytes)
      refuse(path, "the header is truncated: the file has " + str(fileBytes) +
                       " bytes, a header " + str(kTokenDatasetHeaderBytes) +
                       "; " + kRepack);
    layout.packed = true;
    readHeader(path, start, fileBytes, layout);
    if (tokenWidth != 0 && tokenWidth != layout.width)
      refuse(path, "it is a pp token dataset of " +
                       std::to_string(layout.width) +
                       "-byte tokens, but the token width " +
                       std::to_string(tokenWidth) + " was given; pass " +
                       std::to_string(layout.width) +
                       " or no width (the header records it)");
    return layout;
  }
  if (fileBytes % tokenWidth != 0)
    refuse(path, "the file has " + str(fileBytes) +
                     " bytes, not a multiple of the token width " +
                     std::to_string(tokenWidth) + ": it ends inside token " +
                     str(fileBytes / tokenWidth) + " (byte " +
                     str(fileBytes - fileBytes % tokenWidth) +
                     "); check the token width (nanoGPT's uint16 files: 2) "
                     "or copy it again");
  layout.width = tokenWidth;
  layout.count = static_cast<int64_t>(fileBytes / tokenWidth);
  return layout;
}

void checkTokenWidthArgument(const std::string &path, int tokenWidth) {
  if (tokenWidth != 0 && tokenWidth != 2 && tokenWidth != 4)
    refuse(path, "the token width must be 2 or 4 (bytes per token of a flat "
                 "file), or 0 for pp's format; got " +
                     std::to_string(tokenWidth));
}

} // namespace

std::unique_ptr<TokenDataset> TokenDataset::open(const std::string &path,
                                                 int tokenWidth) {
  checkTokenWidthArgument(path, tokenWidth);
  FileDescriptor fd(-1);
  size_t fileBytes = openRegularFile(path, fd);
  std::unique_ptr<TokenDataset> dataset(new TokenDataset);
  dataset->filePath = path;
  dataset->mapped = MappedFile(fd.get(), fileBytes, path, "the token dataset");
  const unsigned char *bytes = dataset->mapped.data();

  FileLayout layout = readLayout(path, bytes, fileBytes, tokenWidth);
  dataset->width = layout.width;
  dataset->tokenCount = layout.count;
  dataset->tokens = layout.packed ? bytes + kTokenDatasetHeaderBytes : bytes;
  dataset->largest = withTokenType(layout.width, [&](auto type) {
    return largestToken<decltype(type)>(dataset->tokens, layout.count);
  });
  if (!layout.packed)
    return dataset;

  Sha256 sha;
  sha.update(dataset->tokens, fileBytes - kTokenDatasetHeaderBytes);
  layout.header.checksum = sha.hex();
  if (layout.header.checksum != layout.recordedChecksum)
    refuse(path, "the SHA-256 of the tokens (bytes " +
                     str(kTokenDatasetHeaderBytes) + " to " + str(fileBytes) +
                     ") is " + layout.header.checksum +
                     ", but the header (byte " + str(kChecksumOffset) +
                     ") records " + layout.recordedChecksum +
                     ": the file is corrupt; copy it again or " + kRepack);
  if (dataset->largest != layout.recordedLargest)
    refuse(path, "byte " + str(kMaxTokenOffset) + ": the header records " +
                     str(layout.recordedLargest) +
                     " as the largest token, but it is " +
                     str(dataset->largest) + " (the header is corrupt); " +
                     kRepack);
  dataset->packedHeader =
      std::make_unique<TokenDatasetHeader>(std::move(layout.header));
  return dataset;
}

int64_t TokenDataset::countTokens(const std::string &path, int tokenWidth) {
  checkTokenWidthArgument(path, tokenWidth);
  FileDescriptor fd(-1);
  size_t fileBytes = openRegularFile(path, fd);
  unsigned char start[kTokenDatasetHeaderBytes];
  size_t wanted = std::min(fileBytes, sizeof(start));
  ssize_t got = ::pread(fd.get(), start, wanted, 0);
  if (got != static_cast<ssize_t>(wanted))
    refuse(path, std::string("cannot read its header: ") +
                     (got < 0 ? std::strerror(errno) : "the file shrank"));
  return readLayout(path, start, fileBytes, tokenWidth).count;
}

TokenDataset::TokenDataset(TokenDataset &&other) noexcept {
  *this = std::move(other);
}

TokenDataset &TokenDataset::operator=(TokenDataset &&other) noexcept {
  if (this != &other) {
    filePath = std::move(other.filePath);
    mapped = std::move(other.mapped);
    tokens = std::exchange(other.tokens, nullptr);
    tokenCount = std::exchange(other.tokenCount, 0);
    width = std::exchange(other.width, 0);
    largest = std::exchange(other.largest, 0);
    packedHeader = std::move(other.packedHeader);
  }
  return *this;
}

TokenDataset::~TokenDataset() = default;

uint32_t TokenDataset::token(int64_t index) const {
  return withTokenType(width, [&](auto type) -> uint32_t {
    return load<decltype(type)>(tokens + index * width);
  });
}

bool TokenDataset::looksLikeWiderTokens() const {
  if (packed() || width != 2 || tokenCount < 16)
    return false;
  for (int64_t i = 1; i < tokenCount; i += 2)
    if (token(i) != 0)
      return false;
  return true;
}

int64_t TokenDataset::firstTokenAtLeast(uint32_t bound) const {
  return withTokenType(width, [&](auto type) -> int64_t {
    using T = decltype(type);
    for (int64_t i = 0; i < tokenCount; ++i)
      if (load<T>(tokens + i * sizeof(T)) >= bound)
        return i;
    return -1;
  });
}

void TokenDataset::read(int64_t first, int64_t count, int64_t *out) const {
  if (first < 0 || count < 0 || first > tokenCount ||
      count > tokenCount - first)
    refuse(filePath, "cannot read " + std::to_string(count) +
                         " tokens from index " + std::to_string(first) +
                         ": the dataset holds " + std::to_string(tokenCount) +
                         " tokens (indices 0 to " +
                         std::to_string(tokenCount - 1) + ")");
  withTokenType(width, [&](auto type) {
    using T = decltype(type);
    const unsigned char *begin = tokens + first * sizeof(T);
    for (int64_t i = 0; i < count; ++i)
      out[i] = load<T>(begin + i * sizeof(T));
  });
}

void writeTokenDataset(const std::string &path,
                       const std::vector<uint32_t> &tokens, int64_t documents,
                       uint32_t vocabulary, int tokenWidth) {
  auto fail = [&](const std::string &message) {
    throw std::runtime_error("cannot write the token dataset '" + path +
                             "': " + message);
  };
  if (tokenWidth != 2 && tokenWidth != 4)
    fail("the token width must be 2 or 4, got " + std::to_string(tokenWidth));
  if (tokens.empty())
    fail("there are no tokens");
  if (documents < 0 || static_cast<uint64_t>(documents) > tokens.size())
    fail(std::to_string(documents) + " documents cannot hold " +
         std::to_string(tokens.size()) + " tokens");
  uint32_t widest = tokenWidth == 2 ? std::numeric_limits<uint16_t>::max()
                                    : std::numeric_limits<uint32_t>::max();
  uint32_t largest = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= vocabulary)
      fail("token " + std::to_string(tokens[i]) + " at index " +
           std::to_string(i) + " is outside the vocabulary of " +
           std::to_string(vocabulary) + " tokens");
    if (tokens[i] > widest)
      fail("token " + std::to_string(tokens[i]) + " at index " +
           std::to_string(i) + " does not fit in " +
           std::to_string(tokenWidth) + " bytes; use a token width of 4");
    largest = std::max(largest, tokens[i]);
  }

  std::vector<unsigned char> bytes(kTokenDatasetHeaderBytes +
                                   tokens.size() * tokenWidth);
  unsigned char *payload = bytes.data() + kTokenDatasetHeaderBytes;
  withTokenType(tokenWidth, [&](auto type) {
    using T = decltype(type);
    for (size_t i = 0; i < tokens.size(); ++i)
      store<T>(payload + i * sizeof(T), static_cast<T>(tokens[i]));
  });
  std::memcpy(bytes.data(), kMagic, sizeof(kMagic));
  store<uint32_t>(bytes.data() + kVersionOffset, kVersion);
  store<uint32_t>(bytes.data() + kWidthOffset, tokenWidth);
  store<uint64_t>(bytes.data() + kCountOffset, tokens.size());
  store<uint64_t>(bytes.data() + kDocumentsOffset, documents);
  store<uint32_t>(bytes.data() + kVocabularyOffset, vocabulary);
  store<uint32_t>(bytes.data() + kMaxTokenOffset, largest);
  Sha256 sha;
  sha.update(payload, bytes.size() - kTokenDatasetHeaderBytes);
  std::array<unsigned char, kChecksumBytes> digest = sha.digest();
  std::memcpy(bytes.data() + kChecksumOffset, digest.data(), digest.size());

  writeOutputFile(path, {FilePiece{bytes.data(), bytes.size()}},
                  "the token dataset");
}

} // namespace pp::runtime

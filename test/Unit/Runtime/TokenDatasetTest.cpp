//===- TokenDatasetTest.cpp - token files written, read and refused -------===//

#include "runtime/data/TokenDataset.h"
#include "runtime/core/Sha256.h"
#include "runtime/data/ByteTokenizer.h"

#include "TemporaryFiles.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

using namespace pp::runtime;

namespace {

/// A fresh temporary directory.
std::string freshDirectory() {
  return ::freshDirectory("pp-token-dataset-test");
}

/// The names in `directory` other than . and ..
std::vector<std::string> entries(const std::string &directory) {
  std::vector<std::string> names;
  DIR *dir = ::opendir(directory.c_str());
  while (dirent *entry = ::readdir(dir))
    if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
      names.push_back(entry->d_name);
  ::closedir(dir);
  return names;
}

/// The little-endian bytes of `values`, each `sizeof(T)` wide.
template <typename T> std::string flatBytes(const std::vector<T> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(T));
}

/// Expects `message` to contain `part`.
void expectMentions(const std::string &message, const std::string &part) {
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

/// The message TokenDataset::open throws for `path`.
std::string openError(const std::string &path, int tokenWidth = 0) {
  try {
    TokenDataset::open(path, tokenWidth);
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  return "opened";
}

/// The message TokenDataset::open throws for a file holding `bytes`.
std::string bytesError(const std::string &bytes, int tokenWidth = 0) {
  std::string path = freshDirectory() + "/tokens.bin";
  writeBytes(path, bytes);
  return openError(path, tokenWidth);
}

/// The message writeTokenDataset throws.
std::string writeError(const std::string &path,
                       const std::vector<uint32_t> &tokens, int64_t documents,
                       uint32_t vocabulary, int tokenWidth) {
  try {
    writeTokenDataset(path, tokens, documents, vocabulary, tokenWidth);
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  return "written";
}

const std::vector<uint32_t> kTokens = {104, 105, 256, 0, 10, 255, 256};

/// The bytes of a valid dataset of kTokens, to corrupt.
std::string packedBytes(int tokenWidth = 2) {
  std::string path = freshDirectory() + "/tokens.bin";
  writeTokenDataset(path, kTokens, 2, kByteVocabulary, tokenWidth);
  return readBytes(path);
}

std::vector<int64_t> readAll(const TokenDataset &dataset) {
  std::vector<int64_t> tokens(dataset.size());
  dataset.read(0, dataset.size(), tokens.data());
  return tokens;
}

TEST(TokenDataset, RoundTripsBothWidths) {
  for (int width : {2, 4}) {
    std::string directory = freshDirectory();
    std::string path = directory + "/tokens.bin";
    writeTokenDataset(path, kTokens, 2, kByteVocabulary, width);
    EXPECT_EQ(entries(directory), std::vector<std::string>{"tokens.bin"});
    std::string bytes = readBytes(path);
    ASSERT_EQ(bytes.size(), kTokenDatasetHeaderBytes + kTokens.size() * width);
    EXPECT_EQ(bytes.substr(0, 8), "PPTOKENS");

    std::unique_ptr<TokenDataset> dataset = TokenDataset::open(path);
    EXPECT_EQ(dataset->path(), path);
    EXPECT_TRUE(dataset->packed());
    EXPECT_EQ(dataset->tokenWidth(), width);
    EXPECT_EQ(dataset->size(), static_cast<int64_t>(kTokens.size()));
    EXPECT_EQ(dataset->maxToken(), 256u);
    ASSERT_NE(dataset->header(), nullptr);
    EXPECT_EQ(dataset->header()->version, 1u);
    EXPECT_EQ(dataset->header()->documents, 2);
    EXPECT_EQ(dataset->header()->vocabulary, kByteVocabulary);
    Sha256 sha;
    sha.update(bytes.data() + kTokenDatasetHeaderBytes,
               bytes.size() - kTokenDatasetHeaderBytes);
    EXPECT_EQ(dataset->header()->checksum, sha.hex());
    EXPECT_EQ(readAll(*dataset),
              std::vector<int64_t>(kTokens.begin(), kTokens.end()));
    for (size_t i = 0; i < kTokens.size(); ++i)
      EXPECT_EQ(dataset->token(i), kTokens[i]);
    // The width may be given when it agrees.
    EXPECT_EQ(TokenDataset::open(path, width)->size(), dataset->size());
  }
}

TEST(TokenDataset, OpensFlatFilesOfBothWidths) {
  std::string directory = freshDirectory();
  writeBytes(directory + "/u16.bin", flatBytes<uint16_t>({50256, 7, 65535, 0}));
  writeBytes(directory + "/u32.bin",
             flatBytes<uint32_t>({100000, 3, 4000000000u}));
  std::unique_ptr<TokenDataset> u16 =
      TokenDataset::open(directory + "/u16.bin", 2);
  EXPECT_FALSE(u16->packed());
  EXPECT_EQ(u16->header(), nullptr);
  EXPECT_EQ(u16->tokenWidth(), 2);
  EXPECT_EQ(u16->maxToken(), 65535u);
  EXPECT_EQ(readAll(*u16), (std::vector<int64_t>{50256, 7, 65535, 0}));
  std::unique_ptr<TokenDataset> u32 =
      TokenDataset::open(directory + "/u32.bin", 4);
  EXPECT_EQ(u32->size(), 3);
  EXPECT_EQ(u32->maxToken(), 4000000000u);
  EXPECT_EQ(readAll(*u32), (std::vector<int64_t>{100000, 3, 4000000000}));
}

TEST(TokenDataset, ReadsRanges) {
  std::string path = freshDirectory() + "/tokens.bin";
  writeTokenDataset(path, kTokens, 2, kByteVocabulary, 2);
  std::unique_ptr<TokenDataset> dataset = TokenDataset::open(path);
  std::vector<int64_t> out(3, -1);
  dataset->read(2, 3, out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{256, 0, 10}));
  dataset->read(6, 1, out.data());
  EXPECT_EQ(out[0], 256);
  dataset->read(7, 0, out.data());
  dataset->read(0, 0, out.data());
}

TEST(TokenDataset, RefusesReadsOutsideTheDataset) {
  std::string path = freshDirectory() + "/tokens.bin";
  writeTokenDataset(path, kTokens, 2, kByteVocabulary, 2);
  std::unique_ptr<TokenDataset> dataset = TokenDataset::open(path);
  std::vector<int64_t> out(8);
  auto readError = [&](int64_t first, int64_t count) -> std::string {
    try {
      dataset->read(first, count, out.data());
    } catch (const std::runtime_error &error) {
      return error.what();
    }
    return "read";
  };
  EXPECT_EQ(readError(5, 3),
            "token dataset '" + path +
                "': cannot read 3 tokens from index 5: the dataset holds 7 "
                "tokens (indices 0 to 6)");
  expectMentions(readError(8, 0), "cannot read 0 tokens from index 8");
  expectMentions(readError(-1, 1), "from index -1");
  expectMentions(readError(0, -1), "cannot read -1 tokens");
  expectMentions(readError(1, INT64_MAX), "the dataset holds 7");
}

TEST(TokenDataset, FindsTheFirstTokenAtLeastABound) {
  std::string path = freshDirectory() + "/tokens.bin";
  writeTokenDataset(path, kTokens, 2, kByteVocabulary, 4);
  std::unique_ptr<TokenDataset> dataset = TokenDataset::open(path);
  EXPECT_EQ(dataset->firstTokenAtLeast(0), 0);
  EXPECT_EQ(dataset->firstTokenAtLeast(105), 1);
  EXPECT_EQ(dataset->firstTokenAtLeast(200), 2);
  EXPECT_EQ(dataset->firstTokenAtLeast(256), 2);
  EXPECT_EQ(dataset->firstTokenAtLeast(257), -1);
}

TEST(TokenDataset, MovesAndClosesItsFile) {
  auto openFiles = [] { return entries("/proc/self/fd").size(); };
  std::string path = freshDirectory() + "/tokens.bin";
  writeTokenDataset(path, kTokens, 2, kByteVocabulary, 2);
  size_t before = openFiles();
  std::unique_ptr<TokenDataset> dataset = TokenDataset::open(path);
  EXPECT_EQ(openFiles(), before);
  TokenDataset moved = std::move(*dataset);
  dataset.reset();
  EXPECT_EQ(moved.size(), 7);
  EXPECT_EQ(readAll(moved),
            std::vector<int64_t>(kTokens.begin(), kTokens.end()));
  TokenDataset assigned = std::move(*TokenDataset::open(path, 2));
  assigned = std::move(moved);
  EXPECT_EQ(assigned.token(0), 104u);
  // Refused files leave no descriptor open either.
  openError("/tmp");
  bytesError("PPTOKENS");
  EXPECT_EQ(openFiles(), before);
}

TEST(TokenDataset, RefusesATruncatedPayload) {
  std::string bytes = packedBytes();
  expectMentions(bytesError(bytes.substr(0, bytes.size() - 1)),
                 "records 7 tokens of 2 bytes, but the file of 85 bytes "
                 "is truncated at token 6 (byte 84); copy it again or "
                 "re-pack it with pp-data pack");
  expectMentions(bytesError(bytes.substr(0, kTokenDatasetHeaderBytes)),
                 "is truncated at token 0 (byte 72)");
}

TEST(TokenDataset, RefusesTrailingBytes) {
  expectMentions(bytesError(packedBytes(4) + "xyz"),
                 "records 7 tokens of 4 bytes, but 3 more bytes follow "
                 "the last token, from byte 100");
}

TEST(TokenDataset, RefusesATruncatedHeader) {
  expectMentions(bytesError(packedBytes().substr(0, 40)),
                 "the header is truncated: the file has 40 bytes, a "
                 "header 72");
  expectMentions(bytesError("PPTOK"), "the header is truncated");
}

TEST(TokenDataset, RefusesABadMagic) {
  std::string bytes = packedBytes();
  bytes[7] = 'Z';
  std::string message = bytesError(bytes);
  expectMentions(message, "byte 0: not a pp token dataset (it does not start "
                          "with \"PPTOKENS\"); for a flat file");
}

TEST(TokenDataset, RefusesAChecksumMismatch) {
  std::string bytes = packedBytes();
  bytes[kTokenDatasetHeaderBytes + 4] ^= 1;
  std::string message = bytesError(bytes);
  expectMentions(message, "the SHA-256 of the tokens (bytes 72 to 86) is ");
  expectMentions(message, ", but the header (byte 40) records ");
}

TEST(TokenDataset, RefusesCorruptHeaderFields) {
  struct Corruption {
    size_t offset;
    uint64_t value;
    size_t bytes;
    const char *message;
  };
  const Corruption corruptions[] = {
      {8, 2, 4,
       "byte 8: format version 2 is not one this pp reads (1); re-pack it "
       "with pp-data pack"},
      {12, 3, 4, "byte 12: the token width 3 is neither 2 nor 4"},
      {36, 255, 4,
       "byte 36: the header records 255 as the largest token, but it is 256"},
      {32, 100, 4,
       "byte 32: the largest token 256 is outside the declared vocabulary of "
       "100 tokens"},
      {24, 8, 8, "byte 24: 8 documents cannot hold 7 tokens"},
  };
  for (const Corruption &corruption : corruptions) {
    std::string bytes = packedBytes();
    // The field's low bytes (little-endian).
    std::memcpy(bytes.data() + corruption.offset, &corruption.value,
                corruption.bytes);
    expectMentions(bytesError(bytes), corruption.message);
  }
  std::string empty = packedBytes().substr(0, kTokenDatasetHeaderBytes);
  std::memset(empty.data() + 16, 0, 8); // the token count
  expectMentions(bytesError(empty), "byte 16: the dataset holds no tokens");
}

TEST(TokenDataset, RefusesAFlatSizeThatIsNotAMultipleOfTheWidth) {
  expectMentions(bytesError(std::string(10, 'a'), 4),
                 "the file has 10 bytes, not a multiple of the token "
                 "width 4: it ends inside token 2 (byte 8)");
}

TEST(TokenDataset, RefusesAFlatFileWithoutAWidth) {
  expectMentions(bytesError(flatBytes<uint16_t>({1, 2, 3})),
                 "pass --token-width 2|4");
}

TEST(TokenDataset, RefusesAWidthThatDisagreesWithTheHeader) {
  expectMentions(bytesError(packedBytes(4), 2),
                 "it is a pp token dataset of 4-byte tokens, but the "
                 "token width 2 was given; pass 4 or no width");
  expectMentions(bytesError(packedBytes(), 3),
                 "the token width must be 2 or 4 (bytes per token of a "
                 "flat file), or 0 for pp's format; got 3");
}

TEST(TokenDataset, RefusesMissingFilesDirectoriesAndEmptyFiles) {
  std::string directory = freshDirectory();
  EXPECT_EQ(openError(directory + "/missing.bin"),
            "token dataset '" + directory +
                "/missing.bin': cannot open it: No such file or directory");
  EXPECT_EQ(openError(directory, 2),
            "token dataset '" + directory +
                "': it is a directory; name the token file in it");
  expectMentions(bytesError("", 2), "the file is empty");
}

TEST(TokenDataset, CountsTokensFromTheHeaderOrTheSize) {
  std::string directory = freshDirectory();
  for (int width : {2, 4}) {
    std::string path = directory + "/packed.bin";
    writeTokenDataset(path, kTokens, 2, kByteVocabulary, width);
    EXPECT_EQ(TokenDataset::countTokens(path), 7);
    EXPECT_EQ(TokenDataset::countTokens(path, width), 7);
  }
  writeBytes(directory + "/flat.bin", flatBytes<uint16_t>({1, 2, 3, 4}));
  EXPECT_EQ(TokenDataset::countTokens(directory + "/flat.bin", 2), 4);
  EXPECT_EQ(TokenDataset::countTokens(directory + "/flat.bin", 4), 2);
  // It reads no token: a corrupt payload is open's to find.
  std::string bytes = packedBytes();
  bytes[kTokenDatasetHeaderBytes] ^= 1;
  writeBytes(directory + "/flipped.bin", bytes);
  EXPECT_EQ(TokenDataset::countTokens(directory + "/flipped.bin"), 7);
}

TEST(TokenDataset, CountingRefusesWhatTheHeaderAndSizeShow) {
  std::string directory = freshDirectory();
  auto countError = [&](const std::string &bytes, int tokenWidth) {
    std::string path = directory + "/tokens.bin";
    writeBytes(path, bytes);
    try {
      TokenDataset::countTokens(path, tokenWidth);
    } catch (const std::runtime_error &error) {
      return std::string(error.what());
    }
    return std::string("counted");
  };
  std::string packed = packedBytes();
  expectMentions(countError(packed.substr(0, packed.size() - 1), 0),
                 "is truncated at token 6 (byte 84)");
  expectMentions(countError(packed + "x", 0), "1 more bytes follow");
  expectMentions(countError(packed.substr(0, 40), 2),
                 "the header is truncated");
  expectMentions(countError(packed, 4), "pass 2 or no width");
  expectMentions(countError(flatBytes<uint16_t>({1, 2, 3}), 0),
                 "pass --token-width 2|4");
  expectMentions(countError(flatBytes<uint16_t>({1, 2, 3}), 4),
                 "not a multiple of the token width 4");
  expectMentions(countError("", 2), "the file is empty");
  expectMentions(countError(packed, 3), "the token width must be 2 or 4");
  try {
    TokenDataset::countTokens(directory, 2);
    ADD_FAILURE() << "counted a directory";
  } catch (const std::runtime_error &error) {
    expectMentions(error.what(), "it is a directory");
  }
}

TEST(TokenDataset, WriterRefusesWhatItCannotRecord) {
  std::string directory = freshDirectory();
  std::string path = directory + "/tokens.bin";
  std::string prefix = "cannot write the token dataset '" + path + "': ";
  EXPECT_EQ(writeError(path, {}, 0, 257, 2), prefix + "there are no tokens");
  EXPECT_EQ(writeError(path, kTokens, 2, 257, 3),
            prefix + "the token width must be 2 or 4, got 3");
  EXPECT_EQ(writeError(path, kTokens, 2, 256, 2),
            prefix + "token 256 at index 2 is outside the vocabulary of 256 "
                     "tokens");
  EXPECT_EQ(writeError(path, {1, 70000}, 1, 100000, 2),
            prefix + "token 70000 at index 1 does not fit in 2 bytes; use a "
                     "token width of 4");
  EXPECT_EQ(writeError(path, kTokens, 8, 257, 2),
            prefix + "8 documents cannot hold 7 tokens");
  EXPECT_TRUE(entries(directory).empty());
  EXPECT_EQ(writeError(directory + "/missing/tokens.bin", kTokens, 2, 257, 2),
            "cannot write the token dataset '" + directory +
                "/missing/tokens.bin': No such file or directory (the folder '" +
                directory + "/missing' must exist and be writable)");
  // A directory is never replaced, and no temporary file is left behind.
  ::mkdir(path.c_str(), 0755);
  expectMentions(writeError(path, kTokens, 2, 257, 2), "Is a directory");
  EXPECT_EQ(entries(directory), std::vector<std::string>{"tokens.bin"});
}

TEST(TokenDataset, WriterReplacesAnExistingFile) {
  std::string path = freshDirectory() + "/tokens.bin";
  writeBytes(path, "old");
  writeTokenDataset(path, {1, 2, 3}, 1, 10, 2);
  EXPECT_EQ(TokenDataset::open(path)->size(), 3);
  struct stat status;
  ASSERT_EQ(::stat(path.c_str(), &status), 0);
  // A new file's permissions, not mkstemp's owner-only ones.
  EXPECT_NE(status.st_mode & 0044, 0u);
}

TEST(ByteTokenizer, TokensAreBytesThenTheEndOfTheDocument) {
  std::vector<uint32_t> tokens;
  appendByteTokens("a\n\xff", tokens);
  appendByteTokens("", tokens);
  EXPECT_EQ(tokens, (std::vector<uint32_t>{97, 10, 255, 256, 256}));
}

TEST(ByteTokenizer, DescribesTokens) {
  EXPECT_EQ(describeByteToken('a'), "'a'");
  EXPECT_EQ(describeByteToken(' '), "' '");
  EXPECT_EQ(describeByteToken('\n'), "'\\n'");
  EXPECT_EQ(describeByteToken('\t'), "'\\t'");
  EXPECT_EQ(describeByteToken('\r'), "'\\r'");
  EXPECT_EQ(describeByteToken('\\'), "'\\\\'");
  EXPECT_EQ(describeByteToken('\''), "'\\''");
  EXPECT_EQ(describeByteToken(7), "'\\x07'");
  EXPECT_EQ(describeByteToken(0xe9), "'\\xe9'");
  EXPECT_EQ(describeByteToken(256), "<end of document>");
  EXPECT_THROW(describeByteToken(257), std::runtime_error);
}

} // namespace

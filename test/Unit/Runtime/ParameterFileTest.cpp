//===- ParameterFileTest.cpp - parameter files written and read back ------===//

#include "runtime/checkpoints/ParameterFile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

using namespace pp::runtime;

namespace {

/// A path in a fresh temporary directory.
std::string freshPath() {
  char directory[] = "/tmp/pp-parameter-file-test-XXXXXX";
  EXPECT_NE(::mkdtemp(directory), nullptr);
  return std::string(directory) + "/params.bin";
}

template <typename T> void append(std::string &bytes, const T &value) {
  bytes.append(reinterpret_cast<const char *>(&value), sizeof(value));
}

/// The bytes of one parameter's entry in a parameter file.
std::string entry(const std::string &name, const Shape &shape,
                  const std::vector<float> &values) {
  std::string bytes;
  append(bytes, static_cast<uint32_t>(name.size()));
  bytes += name;
  append(bytes, static_cast<uint32_t>(shape.size()));
  for (int64_t dim : shape)
    append(bytes, dim);
  for (float value : values)
    append(bytes, value);
  return bytes;
}

/// The message readParameterFile throws for a file holding `bytes`,
/// without the path.
std::string readError(const std::string &bytes) {
  std::string path = freshPath();
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    readParameterFile(path);
  } catch (const std::runtime_error &error) {
    std::string message = error.what();
    return message.substr(message.find("', ") + 3);
  }
  return "read";
}

const std::string kHeader = "pp-parameters 1\n";

TEST(ParameterFile, ReadsBackWhatWasWritten) {
  std::map<std::string, ParameterValues> parameters = {
      {"a", {{2, 3}, {1, -2, 3, 4.5f, 0, -0.25f}}},
      {"b", {{}, {7}}},
      {"empty", {{4, 0, 3}, {}}},
  };
  std::string path = freshPath();
  writeParameterFile(path, parameters);
  std::map<std::string, ParameterValues> read = readParameterFile(path);
  ASSERT_EQ(read.size(), parameters.size());
  for (const auto &[name, parameter] : parameters) {
    EXPECT_EQ(read.at(name).shape, parameter.shape) << name;
    EXPECT_EQ(read.at(name).values, parameter.values) << name;
  }
  EXPECT_EQ(parametersDigest(read), parametersDigest(parameters));
}

TEST(ParameterFile, AFileWithoutParametersIsEmpty) {
  std::string path = freshPath();
  std::ofstream(path, std::ios::binary) << kHeader;
  EXPECT_TRUE(readParameterFile(path).empty());
}

TEST(ParameterFile, AMissingFileSaysSo) {
  try {
    readParameterFile("/nonexistent/params.bin");
    FAIL() << "read a missing file";
  } catch (const std::runtime_error &error) {
    EXPECT_STREQ(error.what(),
                 "cannot read the parameter file '/nonexistent/params.bin': "
                 "No such file or directory");
  }
}

TEST(ParameterFile, ErrorsNameTheByteAndWhatIsWrong) {
  std::string w = entry("w", {2}, {1, 2});
  size_t second = kHeader.size() + w.size();
  EXPECT_EQ(readError("pp-parameters 2\n"),
            "byte 0: not a pp parameter file (it does not start with the line "
            "\"pp-parameters 1\")");
  EXPECT_EQ(readError(kHeader + w + "\x01"),
            "byte " + std::to_string(second) +
                ": the file ends inside a name length");
  EXPECT_EQ(readError(kHeader + w.substr(0, 3)),
            "byte 16: the file ends inside a name length");
  EXPECT_EQ(readError(kHeader + entry("w", {2}, {1})),
            "byte 16: the file ends inside the values of 'w' (shape 2)");
  EXPECT_EQ(readError(kHeader + entry("w", {3, -1}, {})),
            "byte 16: 'w' has the negative dimension -1");
  EXPECT_EQ(readError(kHeader + entry("w", {1ll << 62, 1ll << 62}, {})),
            "byte 16: 'w' (shape 4611686018427387904x4611686018427387904) "
            "has more elements than int64_t can count");
  EXPECT_EQ(readError(kHeader + entry("w", {1ll << 35, 1ll << 55, 0}, {})),
            "byte 16: 'w' (shape 34359738368x36028797018963968x0) has more "
            "elements than int64_t can count");
  EXPECT_EQ(readError(kHeader + w + entry("a", {1}, {3})),
            "byte " + std::to_string(second) +
                ": 'a' follows 'w': parameters must be unique and in name "
                "order");
  EXPECT_EQ(readError(kHeader + w + w),
            "byte " + std::to_string(second) +
                ": 'w' follows 'w': parameters must be unique and in name "
                "order");
}

} // namespace

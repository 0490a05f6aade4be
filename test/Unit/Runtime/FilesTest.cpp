//===- FilesTest.cpp - OutputFile, InputFile, TrustedFiles, MappedFile ----===//

#include "runtime/core/InputFile.h"
#include "runtime/core/MappedFile.h"
#include "runtime/core/OutputFile.h"
#include "runtime/core/TrustedFiles.h"

#include "ErrorOf.h"
#include "TemporaryFiles.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

using namespace pp::runtime;

namespace {

mode_t modeOf(const std::string &path) {
  struct stat status;
  EXPECT_EQ(::lstat(path.c_str(), &status), 0) << path;
  return status.st_mode;
}

std::vector<std::string> namesIn(const std::string &directory) {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(directory))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

TEST(OutputFile, ReplacesARegularFileWholeAtCommit) {
  std::string directory = freshDirectory("pp-output");
  std::string path = directory + "/out.txt";
  writeBytes(path, "old");
  {
    OutputFile file(path, OutputFile::Visibility::AtCommit);
    file.write("new contents");
    EXPECT_EQ(readBytes(path), "old");
  }
  // Destroyed without commit: the old file stays, no temporary is left.
  EXPECT_EQ(readBytes(path), "old");
  EXPECT_EQ(namesIn(directory), std::vector<std::string>{"out.txt"});
  writeOutputFile(path, "new contents");
  EXPECT_EQ(readBytes(path), "new contents");
  EXPECT_EQ(namesIn(directory), std::vector<std::string>{"out.txt"});
}

TEST(OutputFile, WhileWrittenGrowsInPlace) {
  std::string path = freshDirectory("pp-output") + "/metrics.jsonl";
  OutputFile file(path, OutputFile::Visibility::WhileWritten, "--metrics");
  file.write("line 1\n");
  EXPECT_EQ(readBytes(path), "line 1\n");
  file.commit();
}

TEST(OutputFile, WritesThroughACharacterDevice) {
  writeOutputFile("/dev/null", "discarded");
  EXPECT_TRUE(S_ISCHR(modeOf("/dev/null")));
  EXPECT_EQ(errorOf([] { writeOutputFile("/dev/full", "x", "the output"); }),
            "cannot write the output '/dev/full': No space left on device");
  EXPECT_TRUE(S_ISCHR(modeOf("/dev/full")));
}

TEST(OutputFile, RefusesAFifoWithoutReaderADirectoryAndADanglingLink) {
  std::string directory = freshDirectory("pp-output");
  ASSERT_EQ(::mkfifo((directory + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(errorOf([&] { writeOutputFile(directory + "/fifo", "x"); }),
            "cannot write '" + directory +
                "/fifo': it is a FIFO without a reader; start the program "
                "that reads it first");
  EXPECT_TRUE(S_ISFIFO(modeOf(directory + "/fifo")));
  EXPECT_EQ(errorOf([&] { writeOutputFile(directory, "x", "--trace"); }),
            "cannot write --trace '" + directory +
                "': Is a directory; name a file in it");
  ASSERT_EQ(::symlink("missing", (directory + "/link").c_str()), 0);
  EXPECT_NE(errorOf([&] { writeOutputFile(directory + "/link", "x"); })
                .find("symbolic link to a missing file"),
            std::string::npos);
  // The checks before a run say the same, but accept a FIFO: its reader
  // may come later.
  EXPECT_EQ(outputPathProblem(directory + "/fifo"), "");
  EXPECT_EQ(outputPathProblem(directory, "--trace"),
            "cannot write --trace '" + directory +
                "': Is a directory; name a file in it");
  EXPECT_EQ(outputPathProblem(directory + "/missing/x"),
            "cannot write '" + directory +
                "/missing/x': No such file or directory (the folder '" +
                directory + "/missing' must exist and be writable)");
  EXPECT_EQ(outputPathProblem(directory + "/new.txt"), "");
  EXPECT_EQ(namesIn(directory), (std::vector<std::string>{"fifo", "link"}));
}

TEST(OutputFile, ReplacesTheTargetOfASymbolicLink) {
  std::string directory = freshDirectory("pp-output");
  writeBytes(directory + "/target", "old");
  ASSERT_EQ(::symlink("target", (directory + "/link").c_str()), 0);
  writeOutputFile(directory + "/link", "new");
  EXPECT_TRUE(S_ISLNK(modeOf(directory + "/link")));
  EXPECT_EQ(readBytes(directory + "/target"), "new");
}

TEST(InputFile, ReadsOnlyRegularFiles) {
  std::string directory = freshDirectory("pp-input");
  writeBytes(directory + "/model.onnx", "bytes");
  EXPECT_EQ(readInputFile(directory + "/model.onnx", "the model"), "bytes");
  ASSERT_EQ(::mkfifo((directory + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(inputFileProblem(directory + "/fifo", "the model"),
            "cannot read the model '" + directory +
                "/fifo': it is a FIFO, and pp reads only regular files (copy "
                "it into one)");
  EXPECT_EQ(inputFileProblem("/dev/zero", "the schedule file"),
            "cannot read the schedule file '/dev/zero': it is a character "
            "device, and pp reads only regular files (copy it into one)");
  EXPECT_EQ(inputFileProblem(directory, "the input"),
            "cannot read the input '" + directory +
                "': it is a directory, and pp reads only regular files (copy "
                "it into one)");
  EXPECT_EQ(inputFileProblem(directory + "/missing", "the input"),
            "cannot read the input '" + directory +
                "/missing': No such file or directory");
}

TEST(InputFile, ReadsNoMoreThanTheSizeAtOpenAndNoticesAShrink) {
  std::string path = freshDirectory("pp-input") + "/data";
  writeBytes(path, "0123456789");
  InputFile file = InputFile::open(path, "the data");
  EXPECT_EQ(file.size(), 10u);
  ::truncate(path.c_str(), 4);
  EXPECT_NE(errorOf([&] { file.readAll(); }).find("shrank"),
            std::string::npos);
}

TEST(TrustedFiles, RefusesWhatOthersCanWrite) {
  std::string directory = freshDirectory("pp-trust");
  std::string path = directory + "/rates.json";
  writeBytes(path, "{}");
  ::chmod(path.c_str(), 0600);
  std::string problem;
  EXPECT_EQ(readTrustedFile(path, "the cache", problem), "{}");
  EXPECT_EQ(problem, "");
  ::chmod(path.c_str(), 0666);
  EXPECT_EQ(readTrustedFile(path, "the cache", problem), std::nullopt);
  EXPECT_EQ(problem, "the cache '" + path +
                         "' is writable by every user (mode 0666), so another "
                         "user could have put code in it; make it yours alone "
                         "(chmod go-w '" +
                         path + "') or choose another location");
  // A missing file is no problem: there is nothing to trust yet.
  EXPECT_EQ(readTrustedFile(directory + "/missing", "the cache", problem),
            std::nullopt);
  EXPECT_EQ(problem, "");
}

TEST(TrustedFiles, RefusesALinkAndAFolderAboveThatOthersCanWrite) {
  std::string directory = freshDirectory("pp-trust");
  ASSERT_EQ(::symlink(directory.c_str(), (directory + "/link").c_str()), 0);
  EXPECT_NE(untrustedPathProblem(directory + "/link", "the cache directory")
                .find("is a symbolic link"),
            std::string::npos);
  std::string open = directory + "/open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ::chmod(open.c_str(), 0777);
  EXPECT_EQ(preparePrivateDirectory(open + "/cache", /*repair=*/false,
                                    "the cache directory"),
            "a folder above the cache directory '" + open +
                "' is writable by every user (mode 0777), so another user "
                "could have put code in it; make it yours alone (chmod go-w '" +
                open + "') or choose another location");
  ::chmod(open.c_str(), 0700);
  EXPECT_EQ(preparePrivateDirectory(open + "/cache", false,
                                    "the cache directory"),
            "");
  EXPECT_EQ(modeOf(open + "/cache") & 0777, 0700u);
  // A default location of this user's that others may write is repaired.
  ::chmod((open + "/cache").c_str(), 0777);
  EXPECT_NE(preparePrivateDirectory(open + "/cache", false, "the cache"), "");
  EXPECT_EQ(preparePrivateDirectory(open + "/cache", true, "the cache"), "");
  EXPECT_EQ(modeOf(open + "/cache") & 0777, 0700u);
}

TEST(MappedFileDeathTest, ATruncatedFileEndsTheProcessNamingFileAndByte) {
  std::string path = freshDirectory("pp-mapped") + "/tokens.bin";
  writeBytes(path, std::string(3 * 4096, 'x'));
  EXPECT_EXIT(
      {
        InputFile file = InputFile::open(path, "the token dataset");
        MappedFile mapped(file.fd(), file.size(), path, "the token dataset");
        ::truncate(path.c_str(), 0);
        volatile unsigned char byte = mapped.data()[4096 + 5];
        (void)byte;
      },
      ::testing::ExitedWithCode(1),
      "the token dataset '.*tokens.bin' shrank while pp read it: byte 4101 "
      "is gone");
}

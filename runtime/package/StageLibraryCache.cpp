//===- StageLibraryCache.cpp - stage libraries built on first use ---------===//

#include "runtime/package/StageLibraryCache.h"
#include "runtime/core/FileLock.h"
#include "runtime/core/OutputFile.h"
#include "runtime/core/Sha256.h"
#include "runtime/core/TrustedFiles.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace pp::runtime {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string &problem) {
  throw std::runtime_error(problem);
}

/// The bytes of `package`'s source for `target`, checked against the
/// manifest's digest.
std::string verifiedSource(const Package &package, StageTarget target) {
  const char *name = stageTargetFiles(target).source;
  std::string problem = untrustedPathProblem(package.directory, "the package");
  if (!problem.empty())
    fail("invalid pipeline package '" + package.directory + "': " + problem);
  auto recorded = package.files.find(name);
  if (recorded == package.files.end())
    fail("invalid pipeline package '" + package.directory + "': " + name +
         " is not among the files " + kManifestFileName +
         " records; compile it again");
  InputFile file = InputFile::open(package.directory + "/" + name,
                                   "the package's source");
  problem = digestProblem(name, file, recorded->second, kManifestFileName);
  if (!problem.empty())
    fail("invalid pipeline package '" + package.directory + "': " + problem +
         ": the package is damaged; compile it again");
  return file.readAll();
}

/// The digest ROOT/stage-libraries/KEY.json records for the entry, or
/// nullopt when it is missing, unreadable or not this user's alone.
std::optional<FileDigest> recordedDigest(const std::string &record) {
  std::string problem;
  std::optional<std::string> text =
      readTrustedFile(record, "the stage library's record", problem);
  if (!text)
    return std::nullopt;
  json parsed = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed["bytes"].is_number_unsigned() ||
      !parsed["sha256"].is_string())
    return std::nullopt;
  return FileDigest{parsed["bytes"].get<uint64_t>(),
                    parsed["sha256"].get<std::string>()};
}

/// Why the library at `path` does not match `digest` or cannot be used,
/// or "".
std::string entryProblem(const std::string &path, const FileDigest &digest,
                         const std::string &record) {
  try {
    InputFile file = InputFile::open(path, "the stage library");
    std::string problem = untrustedFileProblem(file.fd(), path, "the stage library");
    return problem.empty()
               ? digestProblem(path, file, digest, record)
               : problem;
  } catch (const std::runtime_error &failure) {
    return failure.what();
  }
}

/// Compiles `source` for `target` in a private staging directory beside
/// `entry`, records the library's digest in `record` and moves the
/// staging directory to `entry`.
FileDigest buildEntry(StageTarget target, const std::string &source,
                      const std::string &entry, const std::string &record) {
  const StageTargetFiles &files = stageTargetFiles(target);
  std::string staging = entry + ".tmp" + std::to_string(::getpid());
  std::error_code ignored;
  std::filesystem::remove_all(staging, ignored);
  // Every file of the entry is this user's alone, whatever the umask.
  struct PrivateFiles {
    mode_t previous = ::umask(077);
    ~PrivateFiles() { ::umask(previous); }
  } privateFiles;
  if (::mkdir(staging.c_str(), 0700) != 0)
    fail("cannot create '" + staging + "': " + std::strerror(errno) +
         " (set --cache-dir or PP_CACHE_DIR to a writable directory)");
  std::string library = staging + "/" + files.library;
  writeOutputFile(staging + "/" + files.source, source, "the stage source",
                  0600);
  std::string problem = compileStageLibrary(
      target, staging + "/" + files.source, library,
      staging + "/compile-" + files.name + ".log");
  if (!problem.empty())
    fail("cannot build the " + std::string(files.name) +
         " stage library: " + problem);
  InputFile built = InputFile::open(library, "the stage library");
  std::optional<FileDigest> digest = digestOf(built, problem);
  if (!digest)
    fail("cannot read the stage library just built, '" + library +
         "': " + problem);
  std::filesystem::remove_all(entry, ignored);
  if (::rename(staging.c_str(), entry.c_str()) != 0)
    fail("cannot move the stage library into '" + entry +
         "': " + std::strerror(errno));
  writeOutputFile(record,
                  json{{"bytes", digest->bytes}, {"sha256", digest->sha256}}
                          .dump() +
                      "\n",
                  "the stage library's record", 0600);
  return *digest;
}

} // namespace

StageLibraryFile stageLibraryFor(const Package &package, StageTarget target,
                                 const std::string &root,
                                 std::ostream &notes) {
  if (std::optional<StageLibraryFile> own = package.compiledLibrary(target))
    return *own;
  const StageTargetFiles &files = stageTargetFiles(target);
  if (!canCompileStages(target))
    fail("invalid pipeline package '" + package.directory + "': it has no " +
         files.library + " and this pp cannot compile " + files.name +
         " code (built without a CUDA toolkit); use a pp built with one, or "
         "emit the package with pp-opt --pp-emit-cuda where nvcc exists");
  std::string source = verifiedSource(package, target);
  Sha256 keyHash;
  std::string identity = package.files.at(files.source).sha256 + "\n" +
                         stageCompilerIdentity(target);
  keyHash.update(identity.data(), identity.size());
  std::string key = keyHash.hex().substr(0, 32);

  std::string problem =
      preparePrivateDirectory(root + "/stage-libraries", /*repair=*/false,
                              "the cache directory");
  if (!problem.empty())
    fail(problem + " (set --cache-dir or PP_CACHE_DIR)");
  std::string entry = root + "/stage-libraries/" + key;
  std::string record = entry + ".json";
  std::string library = entry + "/" + files.library;
  std::optional<FileLock> lock = FileLock::acquire(
      cacheLockPath(root, "stage-library-" + key), /*wait=*/true, problem);
  if (!lock)
    fail(problem);
  std::optional<FileDigest> digest = recordedDigest(record);
  if (digest) {
    problem = entryProblem(library, *digest, record);
    if (problem.empty())
      return {library, *digest, record};
    notes << "pp: the cached " << files.name << " stage library '" << library
          << "' cannot be used (" << problem << "); compiling it again\n";
  } else {
    notes << "pp: compiling the " << files.name
          << " stage library of package '" << package.directory
          << "' (once; kept in '" << entry << "')\n";
  }
  return {library, buildEntry(target, source, entry, record), record};
}

} // namespace pp::runtime

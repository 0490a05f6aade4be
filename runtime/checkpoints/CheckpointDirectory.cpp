//===- CheckpointDirectory.cpp - atomic checkpoint directories ------------===//

#include "runtime/checkpoints/CheckpointDirectory.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace pp::runtime {
namespace {

constexpr char kStepPrefix[] = "step-";
constexpr char kTemporaryPrefix[] = ".tmp-";

[[noreturn]] void fail(const std::string &what, const std::string &path) {
  throw std::runtime_error("checkpoint: cannot " + what + " '" + path +
                           "': " + std::strerror(errno));
}

/// Opens `path` (a file or directory), fsyncs and closes it.
void fsyncPath(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail("open", path);
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced)
    fail("fsync", path);
}

/// Whether `path` holds a state file that parses and names `step`.
bool isComplete(const fs::path &path, int64_t step) {
  std::ifstream file(path / kCheckpointStateFile);
  if (!file)
    return false;
  nlohmann::json state = nlohmann::json::parse(file, nullptr,
                                               /*allow_exceptions=*/false);
  return state.is_object() && state.contains("step") &&
         state["step"].is_number_integer() &&
         state["step"].get<int64_t>() == step;
}

} // namespace

std::string checkpointName(int64_t step) {
  std::ostringstream name;
  name << kStepPrefix << std::setw(8) << std::setfill('0') << step;
  return name.str();
}

std::optional<int64_t> parseCheckpointName(const std::string &name,
                                           std::string &problem) {
  problem.clear();
  size_t prefix = sizeof(kStepPrefix) - 1;
  if (name.compare(0, prefix, kStepPrefix) != 0 || name.size() == prefix)
    return std::nullopt;
  int64_t step = 0;
  bool inRange = true;
  for (size_t i = prefix; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return std::nullopt;
    inRange = inRange && !__builtin_mul_overflow(step, 10, &step) &&
              !__builtin_add_overflow(step, name[i] - '0', &step);
  }
  if (!inRange) {
    problem = "its step is out of range (a step is at most " +
              std::to_string(INT64_MAX) + ")";
    return std::nullopt;
  }
  if (name != checkpointName(step)) {
    problem = "pp names the checkpoint of step " + std::to_string(step) + " '" +
              checkpointName(step) +
              "' (the step in at least 8 digits, with no further leading "
              "zeros); rename it so to resume from it";
    return std::nullopt;
  }
  return step;
}

std::string checkpointDirectoryProblem(const std::string &dir) {
  std::error_code error;
  fs::path existing = fs::absolute(dir, error);
  if (error)
    return error.message();
  bool exists = true;
  while (!fs::exists(existing, error) && existing.has_relative_path()) {
    existing = existing.parent_path();
    exists = false;
  }
  if (!fs::is_directory(existing, error))
    return exists ? "it exists and is not a directory"
                  : "'" + existing.string() +
                        "' is not a directory, so nothing can be created in "
                        "it";
  std::string probe =
      (existing / (std::string(kTemporaryPrefix) + "probe-XXXXXX")).string();
  if (!::mkdtemp(probe.data()))
    return "cannot create a directory in '" + existing.string() +
           "': " + std::strerror(errno);
  ::rmdir(probe.c_str());
  return "";
}

std::string beginCheckpoint(const std::string &dir, int64_t step) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error)
    throw std::runtime_error("checkpoint: cannot create the directory '" +
                             dir + "': " + error.message());
  for (const fs::directory_entry &entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(kTemporaryPrefix, 0) != 0)
      continue;
    fs::remove_all(entry.path(), error);
    if (error)
      throw std::runtime_error("checkpoint: cannot remove the stale '" +
                               entry.path().string() +
                               "': " + error.message());
  }
  std::random_device random;
  std::ostringstream name;
  name << kTemporaryPrefix << checkpointName(step) << "-" << std::hex
       << random() << random();
  std::string path = (fs::path(dir) / name.str()).string();
  if (::mkdir(path.c_str(), 0755) != 0)
    fail("create the directory", path);
  return path;
}

void writeFileSynced(const std::string &path, const std::string &contents) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("create", path);
  const char *at = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t written = ::write(fd, at, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      fail("write", path);
    }
    at += written;
    left -= static_cast<size_t>(written);
  }
  bool synced = ::fsync(fd) == 0;
  if (::close(fd) != 0 || !synced)
    fail("fsync", path);
}

std::string commitCheckpoint(const std::string &dir,
                             const std::string &temporary, int64_t step) {
  fsyncPath(temporary);
  fs::path final = fs::path(dir) / checkpointName(step);
  std::error_code error;
  if (fs::exists(final, error)) {
    // A checkpoint of this step from an earlier run: move it aside (a
    // .tmp- name, which the next save removes) and replace it.
    fs::path aside = temporary + "-replaced";
    fs::rename(final, aside, error);
    if (error)
      throw std::runtime_error("checkpoint: cannot move the old '" +
                               final.string() + "' aside: " + error.message());
    if (::rename(temporary.c_str(), final.c_str()) != 0)
      fail("rename the checkpoint to", final.string());
    fs::remove_all(aside, error);
  } else if (::rename(temporary.c_str(), final.c_str()) != 0) {
    fail("rename the checkpoint to", final.string());
  }
  fsyncPath(dir);
  return final.string();
}

std::vector<CheckpointRef>
checkpointDirectories(const std::string &dir,
                      std::vector<std::string> *misnamed) {
  std::vector<CheckpointRef> found;
  std::error_code error;
  if (!fs::is_directory(dir, error))
    return found;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir)) {
    std::string problem;
    std::optional<int64_t> step =
        parseCheckpointName(entry.path().filename().string(), problem);
    if (!entry.is_directory(error))
      continue;
    if (step)
      found.push_back({*step, entry.path().string()});
    else if (misnamed && !problem.empty())
      misnamed->push_back("'" + entry.path().string() +
                          "' is no checkpoint name: " + problem);
  }
  std::sort(found.begin(), found.end(),
            [](const CheckpointRef &a, const CheckpointRef &b) {
              return a.step < b.step;
            });
  if (misnamed)
    std::sort(misnamed->begin(), misnamed->end());
  return found;
}

std::vector<CheckpointRef> completeCheckpoints(const std::string &dir) {
  std::vector<CheckpointRef> found = checkpointDirectories(dir);
  found.erase(std::remove_if(found.begin(), found.end(),
                             [](const CheckpointRef &checkpoint) {
                               return !isComplete(checkpoint.path,
                                                  checkpoint.step);
                             }),
              found.end());
  return found;
}

std::optional<CheckpointRef> newestCheckpoint(const std::string &dir) {
  std::vector<CheckpointRef> found = completeCheckpoints(dir);
  if (found.empty())
    return std::nullopt;
  return found.back();
}

void keepNewestCheckpoints(const std::string &dir, int64_t keep) {
  std::vector<CheckpointRef> found = completeCheckpoints(dir);
  for (int64_t i = 0; i + keep < static_cast<int64_t>(found.size()); ++i) {
    // Renamed to a .tmp- name first, so that a crash while deleting leaves
    // no half-deleted checkpoint that looks complete.
    std::string doomed = (fs::path(dir) / (kTemporaryPrefix +
                                           checkpointName(found[i].step) +
                                           "-deleted"))
                             .string();
    if (::rename(found[i].path.c_str(), doomed.c_str()) != 0)
      fail("move aside the old checkpoint", found[i].path);
    std::error_code error;
    fs::remove_all(doomed, error);
    if (error)
      throw std::runtime_error("checkpoint: cannot delete the old '" + doomed +
                               "': " + error.message());
  }
}

} // namespace pp::runtime

//===- TrustedFiles.cpp - files only this user could have written ---------===//

#include "runtime/core/TrustedFiles.h"

#include "runtime/core/InputFile.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace pp::runtime {
namespace {

/// "user 65534 (nobody)".
std::string describeUser(uid_t uid) {
  std::string text = "user " + std::to_string(uid);
  if (const passwd *entry = ::getpwuid(uid))
    text += std::string(" (") + entry->pw_name + ")";
  return text;
}

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

/// Whether group `gid` is the private group of user `uid` (named as the
/// user, with no other members), where group write gives nobody else
/// access: the convention of a umask of 002.
bool isPrivateGroup(gid_t gid, uid_t uid) {
  const group *entry = ::getgrgid(gid);
  const passwd *user = ::getpwuid(uid);
  if (!entry || !user || std::strcmp(entry->gr_name, user->pw_name) != 0)
    return false;
  for (char **member = entry->gr_mem; *member; ++member)
    if (std::strcmp(*member, user->pw_name) != 0)
      return false;
  return true;
}

/// Why `status` (of `path`, `what`) is not trusted, or "".
std::string statusProblem(const struct stat &status, const std::string &path,
                          const std::string &what) {
  uid_t me = ::geteuid();
  if (status.st_uid != me && status.st_uid != 0)
    return what + " '" + path + "' belongs to " +
           describeUser(status.st_uid) + ", not to " + describeUser(me) +
           ", so that user could have put code in it; use one of your own "
           "(remove it, or choose another location)";
  bool othersWrite =
      (status.st_mode & S_IWOTH) ||
      ((status.st_mode & S_IWGRP) && !isPrivateGroup(status.st_gid, me));
  if (othersWrite)
    return what + " '" + path + "' is writable by " +
           (status.st_mode & S_IWOTH ? "every user" : "its group") +
           " (mode " + octal(status.st_mode) +
           "), so another user could have put code in it; make it yours "
           "alone (chmod go-w '" +
           path + "') or choose another location";
  return "";
}

} // namespace

std::string untrustedFileProblem(int fd, const std::string &path,
                                 const std::string &what) {
  struct stat status;
  if (::fstat(fd, &status) != 0)
    return "cannot inspect " + what + " '" + path + "': " +
           std::strerror(errno);
  return statusProblem(status, path, what);
}

std::string untrustedPathProblem(const std::string &path,
                                 const std::string &what) {
  struct stat status;
  if (::lstat(path.c_str(), &status) != 0)
    return "cannot inspect " + what + " '" + path + "': " +
           std::strerror(errno);
  if (S_ISLNK(status.st_mode))
    return what + " '" + path +
           "' is a symbolic link, which pp does not follow here; name the "
           "directory it points to";
  std::string problem = statusProblem(status, path, what);
  if (!problem.empty())
    return problem;
  // No folder above it may let others move it away: each is trusted too,
  // or root's and sticky (as /tmp, where only owners rename).
  std::error_code error;
  std::filesystem::path folder =
      std::filesystem::canonical(std::filesystem::absolute(path, error), error)
          .parent_path();
  for (; !error && !folder.empty(); folder = folder.parent_path()) {
    struct stat above;
    if (::stat(folder.c_str(), &above) != 0)
      return "cannot inspect '" + folder.string() +
             "', a folder above " + what + " '" + path +
             "': " + std::strerror(errno);
    bool sharedSticky = (above.st_mode & S_ISVTX) && above.st_uid == 0;
    if (!sharedSticky) {
      std::string problem =
          statusProblem(above, folder.string(), "a folder above " + what);
      if (!problem.empty())
        return problem;
    }
    if (folder == folder.root_path())
      break;
  }
  return "";
}

std::optional<std::string> readTrustedFile(const std::string &path,
                                           const std::string &what,
                                           std::string &problem) {
  problem.clear();
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    return std::nullopt;
  try {
    InputFile file = InputFile::open(path, what);
    problem = untrustedFileProblem(file.fd(), path, what);
    if (problem.empty()) {
      std::filesystem::path folder = std::filesystem::path(path).parent_path();
      problem = untrustedPathProblem(folder.empty() ? "." : folder.string(),
                                     "the folder of " + what);
    }
    if (problem.empty())
      return file.readAll();
  } catch (const std::runtime_error &failure) {
    problem = failure.what();
  }
  return std::nullopt;
}

std::string preparePrivateDirectory(const std::string &path, bool repair,
                                    const std::string &what) {
  std::error_code error;
  std::filesystem::path folder(path);
  if (!std::filesystem::exists(folder, error)) {
    // Parents as umask allows, the directory itself for this user only.
    if (folder.has_parent_path())
      std::filesystem::create_directories(folder.parent_path(), error);
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create " + what + " '" + path +
             "': " + std::strerror(errno) + "; choose a writable location";
  }
  struct stat status;
  if (repair && ::lstat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode) &&
      status.st_uid == ::geteuid() && (status.st_mode & 077))
    ::chmod(path.c_str(), 0700);
  return untrustedPathProblem(path, what);
}

} // namespace pp::runtime

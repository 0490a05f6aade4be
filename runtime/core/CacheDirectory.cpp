//===- CacheDirectory.cpp - where pp keeps what it builds -----------------===//

#include "runtime/core/CacheDirectory.h"

#include <cstdlib>

namespace pp::runtime {

std::string cacheRoot(const std::string &cacheDir) {
  if (!cacheDir.empty())
    return cacheDir;
  if (const char *dir = std::getenv("PP_CACHE_DIR"))
    return dir;
  if (const char *home = std::getenv("HOME"))
    return std::string(home) + "/.cache/pp";
  return "/tmp/pp-cache";
}

} // namespace pp::runtime

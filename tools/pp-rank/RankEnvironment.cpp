//===- RankEnvironment.cpp - a rank's place from torchrun's variables -----===//

#include "tools/pp-rank/RankEnvironment.h"

#include "runtime/communication/JobSecret.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

std::optional<int> environmentInt(const char *name, std::string &problem) {
  const char *value = std::getenv(name);
  if (!value)
    return std::nullopt;
  char *end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || parsed < 0 || parsed > INT32_MAX) {
    problem = std::string(name) + "='" + value +
              "' is not a non-negative integer";
    return std::nullopt;
  }
  return static_cast<int>(parsed);
}

pp::runtime::RendezvousInfo rendezvousFromEnvironment(int timeoutSeconds) {
  std::string problem;
  std::optional<int> rank = environmentInt("RANK", problem);
  std::optional<int> worldSize = environmentInt("WORLD_SIZE", problem);
  std::optional<int> masterPort = environmentInt("MASTER_PORT", problem);
  if (!problem.empty())
    throw std::runtime_error(problem);
  pp::runtime::RendezvousInfo info;
  info.rank = rank.value_or(0);
  info.worldSize = worldSize.value_or(1);
  if (info.rank >= info.worldSize)
    throw std::runtime_error("RANK=" + std::to_string(info.rank) +
                             " is not below WORLD_SIZE=" +
                             std::to_string(info.worldSize));
  if (const char *addr = std::getenv("MASTER_ADDR"))
    info.masterAddr = addr;
  if (const char *secret = std::getenv(pp::runtime::kJobSecretVariable))
    info.jobSecret = secret;
  if (info.worldSize > 1 && !masterPort)
    throw std::runtime_error("MASTER_PORT is not set; a job of " +
                             std::to_string(info.worldSize) +
                             " ranks needs MASTER_ADDR and MASTER_PORT");
  info.masterPort = masterPort.value_or(29500);
  info.timeout = std::chrono::seconds(timeoutSeconds);
  return info;
}

int availableCpus() {
  cpu_set_t cpus;
  return ::sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus)
                                                          : 1;
}

int threadsAmong(int requested, int ranks) {
  if (requested > 0)
    return requested;
  return std::max(1, availableCpus() / std::max(1, ranks));
}

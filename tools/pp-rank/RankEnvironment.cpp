//===- RankEnvironment.cpp - a rank's place from torchrun's variables -----===//

#include "tools/pp-rank/RankEnvironment.h"

#include "runtime/communication/JobSecret.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
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
  std::optional<int> storeListener = environmentInt(kStoreFdVariable, problem);
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
  if (info.rank == 0 && storeListener) {
    // The launcher's socket: this process's alone from now on.
    int listening = 0;
    socklen_t length = sizeof(listening);
    if (::getsockopt(*storeListener, SOL_SOCKET, SO_ACCEPTCONN, &listening,
                     &length) != 0 ||
        !listening)
      throw std::runtime_error(std::string(kStoreFdVariable) + "=" +
                               std::to_string(*storeListener) +
                               " is not a listening socket; unset it (only "
                               "pp-run's launcher sets it)");
    ::fcntl(*storeListener, F_SETFD, FD_CLOEXEC);
    ::unsetenv(kStoreFdVariable);
    info.storeListener = *storeListener;
  }
  info.timeout = std::chrono::seconds(timeoutSeconds);
  return info;
}

std::string firstSlurmHost(const std::string &nodeList) {
  size_t bracket = nodeList.find('['), comma = nodeList.find(',');
  if (bracket == std::string::npos || comma < bracket)
    return nodeList.substr(0, comma);
  // "prefix[01-04,07]suffix": the first number of the first range.
  size_t end = nodeList.find_first_of("-,]", bracket + 1);
  size_t close = nodeList.find(']', bracket);
  std::string suffix;
  if (close != std::string::npos)
    suffix = nodeList.substr(close + 1, nodeList.find(',', close) - close - 1);
  return nodeList.substr(0, bracket) +
         nodeList.substr(bracket + 1, end - bracket - 1) + suffix;
}

std::optional<int> slurmTasksOnNode(const std::string &tasksPerNode, int node) {
  // Comma-separated "COUNT" or "COUNT(xREPEATS)".
  size_t at = 0;
  while (at < tasksPerNode.size()) {
    size_t end = tasksPerNode.find(',', at);
    std::string entry = tasksPerNode.substr(at, end - at);
    int count = 0, repeats = 1;
    if (std::sscanf(entry.c_str(), "%d(x%d)", &count, &repeats) < 1 ||
        count < 1 || repeats < 1)
      return std::nullopt;
    if (node < repeats)
      return count;
    node -= repeats;
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return std::nullopt;
}

bool adoptSlurmEnvironment() {
  // srun sets SLURM_STEP_NUM_TASKS for the tasks of its step; a batch
  // script, or srun of one task, runs pp-run as the launcher.
  if (std::getenv("RANK") || !std::getenv("SLURM_PROCID") ||
      !std::getenv("SLURM_STEP_NUM_TASKS"))
    return false;
  std::string problem;
  int rank = environmentInt("SLURM_PROCID", problem).value_or(0);
  int tasks = environmentInt("SLURM_STEP_NUM_TASKS", problem).value_or(1);
  if (problem.empty() && tasks < 2)
    return false;
  int local = environmentInt("SLURM_LOCALID", problem).value_or(0);
  int node = environmentInt("SLURM_NODEID", problem).value_or(0);
  if (!problem.empty())
    throw std::runtime_error("under srun: " + problem);
  const char *perNode = std::getenv("SLURM_TASKS_PER_NODE");
  std::optional<int> localTasks =
      perNode ? slurmTasksOnNode(perNode, node) : std::nullopt;
  if (perNode && !localTasks)
    throw std::runtime_error(std::string("under srun: SLURM_TASKS_PER_NODE='") +
                             perNode + "' gives no task count for node " +
                             std::to_string(node));
  const char *nodeList = std::getenv("SLURM_JOB_NODELIST");
  if (!nodeList)
    nodeList = std::getenv("SLURM_NODELIST");
  std::string master = firstSlurmHost(nodeList ? nodeList : "");
  if (!std::getenv("MASTER_ADDR") && master.empty())
    throw std::runtime_error(
        "under srun: neither MASTER_ADDR nor SLURM_JOB_NODELIST says where "
        "rank 0 runs; export MASTER_ADDR");
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(tasks).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(localTasks.value_or(1)).c_str(),
           1);
  if (!master.empty())
    ::setenv("MASTER_ADDR", master.c_str(), 0);
  ::setenv("MASTER_PORT", "29500", 0);
  return true;
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

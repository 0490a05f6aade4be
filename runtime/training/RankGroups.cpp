//===- RankGroups.cpp - a rank's place in the mesh and its groups ---------===//

#include "runtime/training/RankGroups.h"

#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/communication/SharedMemoryCollectives.h"
#include "runtime/data/Sampler.h"
#include "runtime/training/JobExchanges.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// The stage functions' collectives over the tensor-parallel `group`, as
/// `choice` says; see TensorCollectives.
std::unique_ptr<CollectiveGroup>
connectTensorCollectives(Communicator &group, TensorCollectives choice) {
  if (group.worldSize() > 1 && choice != TensorCollectives::Tcp) {
    std::string whyNot;
    if (std::unique_ptr<SharedMemoryCollectives> shared =
            SharedMemoryCollectives::connect(group, "tp", whyNot))
      return shared;
    if (choice == TensorCollectives::SharedMemory)
      throw std::runtime_error(
          "--tp-collectives shm: " + whyNot +
          "; use --tp-collectives tcp (or auto, which falls back to TCP) "
          "for tensor-parallel groups whose ranks cannot share memory");
  }
  return std::make_unique<CommunicatorCollectives>(group);
}

} // namespace

std::optional<TensorCollectives>
parseTensorCollectives(const std::string &name) {
  if (name == "auto")
    return TensorCollectives::Auto;
  if (name == "shm")
    return TensorCollectives::SharedMemory;
  if (name == "tcp" || name == "gloo")
    return TensorCollectives::Tcp;
  return std::nullopt;
}

const char *tensorCollectivesName(TensorCollectives collectives) {
  switch (collectives) {
  case TensorCollectives::Auto:
    return "auto";
  case TensorCollectives::SharedMemory:
    return "shm";
  case TensorCollectives::Tcp:
    return "tcp";
  }
  return "unknown";
}

std::string machineIdentity() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  char network[64] = {0};
  ssize_t length =
      ::readlink("/proc/self/ns/net", network, sizeof(network) - 1);
  return std::string(host) + " " +
         (length > 0 ? std::string(network, static_cast<size_t>(length)) : "");
}

std::vector<std::string> RankGroups::axesAcrossMachines() const {
  std::vector<std::string> across;
  for (const MeshAxis &axis : mesh.axes())
    for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank) {
      std::vector<int64_t> members = mesh.group(rank, {axis.name});
      if (std::any_of(members.begin(), members.end(), [&](int64_t member) {
            return machines.at(member) != machines.at(rank);
          })) {
        across.push_back(axis.name);
        break;
      }
    }
  return across;
}

DeviceMesh jobMesh(const Package &package, int64_t dataParallel,
                   const std::vector<std::string> &meshOrder, int worldSize) {
  DeviceMesh mesh = dataParallelMesh(package.mesh, dataParallel, meshOrder);
  if (worldSize != mesh.deviceCount())
    throw std::runtime_error(
        "the job's mesh " + mesh.describe() + " has device count " +
        std::to_string(mesh.deviceCount()) + ", but the job's WORLD_SIZE is " +
        std::to_string(worldSize) + "; start one rank per device (--nproc " +
        std::to_string(mesh.deviceCount()) + ")");
  for (const MeshAxis &axis : mesh.axes()) {
    bool data = axis.kind == AxisKind::DataReplicate ||
                axis.kind == AxisKind::DataShard;
    if (data && axis.name != "dp" && axis.size > 1)
      throw std::runtime_error(
          "the package's mesh has a data axis '" + axis.name + "' of size " +
          std::to_string(axis.size) +
          "; pp-run adds data parallelism itself (--dp): compile the "
          "package without that axis");
    if (axis.kind == AxisKind::Context && axis.size > 1)
      throw std::runtime_error(
          "the package's mesh has a context axis '" + axis.name +
          "' of size " + std::to_string(axis.size) +
          "; pp-run trains pipeline, data- and tensor-parallel meshes only "
          "so far (context parallelism is not supported yet)");
  }
  return mesh;
}

std::vector<std::vector<int64_t>> groupsOf(const DeviceMesh &mesh, int rank) {
  std::vector<std::string> pipelineAxes;
  if (const MeshAxis *axis = mesh.pipelineAxis())
    pipelineAxes.push_back(axis->name);
  return {mesh.group(rank, pipelineAxes), mesh.group(rank, {"dp"}),
          mesh.group(rank, mesh.tensorAxes())};
}

std::vector<int> groupPeers(const DeviceMesh &mesh, int rank) {
  std::vector<int> peers;
  for (const std::vector<int64_t> &group : groupsOf(mesh, rank))
    for (int64_t member : group)
      if (member != rank)
        peers.push_back(static_cast<int>(member));
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

RankGroups splitIntoGroups(Communicator &world, DeviceMesh mesh) {
  RankGroups groups;
  groups.mesh = std::move(mesh);
  DataCoordinates at = dataCoordinates(groups.mesh, world.rank());
  groups.stage = at.stage;
  groups.dataParallelRank = at.dataRank;
  groups.dataParallelSize = at.dataParallel;
  std::vector<std::vector<int64_t>> members =
      groupsOf(groups.mesh, world.rank());
  groups.pipeline = world.split("pipeline", members[0]);
  groups.dataParallel = world.split("dp", members[1]);
  groups.tensorParallel = world.split("tp", members[2]);
  groups.tensorParallelRank = groups.tensorParallel->rank();
  groups.tensorParallelSize = groups.tensorParallel->worldSize();
  groups.machines = gatherTextToRank0(groups, machineIdentity());
  return groups;
}

RankGroups connectRankGroups(const Package &package, Communicator &world,
                             int64_t dataParallel,
                             const std::vector<std::string> &meshOrder,
                             TensorCollectives collectives) {
  RankGroups groups = splitIntoGroups(
      world, jobMesh(package, dataParallel, meshOrder, world.worldSize()));
  groups.collectives =
      connectTensorCollectives(*groups.tensorParallel, collectives);
  // The generated collectives name their axes as the package's mesh
  // orders them, whatever --mesh-order does to the job's.
  groups.tensorAxes = package.mesh.tensorAxes();
  return groups;
}

} // namespace pp::runtime

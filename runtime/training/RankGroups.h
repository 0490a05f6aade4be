//===- RankGroups.h - a rank's place in the mesh and its groups -*- C++ -*-===//
//
// A rank talks in three groups: its pipeline (the ranks that differ from it
// only in the pipeline coordinate), its data-parallel replicas and its
// tensor-parallel devices, and its stage functions' collectives run over
// the last one.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_RANKGROUPS_H
#define PP_RUNTIME_TRAINING_RANKGROUPS_H

#include "runtime/communication/Communicator.h"
#include "runtime/communication/DeviceMesh.h"
#include "runtime/kernels/Frame.h"
#include "runtime/package/Package.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// A rank's place in the job's mesh and the groups it talks in.
struct RankGroups {
  /// The job's mesh: the package's axes (pipeline and tensor) and the "dp"
  /// axis.
  DeviceMesh mesh;
  int64_t stage = 0;
  int64_t dataParallelRank = 0, dataParallelSize = 1;
  /// This rank's coordinate over the package's tensor axes and their
  /// devices (1 without any).
  int64_t tensorParallelRank = 0, tensorParallelSize = 1;
  /// The ranks that differ from this one only in the pipeline coordinate
  /// (its rank is the stage), only in the dp coordinate (its rank is the
  /// dp coordinate), and only in the tensor axes' coordinates (its rank is
  /// tensorParallelRank).
  std::unique_ptr<Communicator> pipeline, dataParallel, tensorParallel;
  /// The stage functions' collectives: over `tensorParallel`, whose mesh
  /// axes (the package's tensor axes, in the package mesh's order, which
  /// the generated collectives name them in) are `tensorAxes`.
  std::unique_ptr<CollectiveGroup> collectives;
  std::vector<std::string> tensorAxes;
  /// On job rank 0 (empty elsewhere), per job rank, the machine it runs
  /// on (machineIdentity()).
  std::vector<std::string> machines;

  /// On job rank 0, the mesh axes whose groups hold ranks of several
  /// machines, in the mesh's order.
  std::vector<std::string> axesAcrossMachines() const;
};

/// This process's machine, as the ranks tell machines apart: its host name
/// and its network namespace (two namespaces of one host are two hosts to
/// the network).
std::string machineIdentity();

/// What the stage functions' collectives (RankGroups::collectives) run
/// over, for a tensor-parallel group of more than one rank.
enum class TensorCollectives {
  /// Shared memory when every rank of the group can map the same segment
  /// (the ranks are on one host), else Tcp.
  Auto,
  /// Shared memory (SharedMemoryCollectives.h); an error where the ranks
  /// cannot share memory.
  SharedMemory,
  /// The communicator's collectives over the job's authenticated TCP links
  /// (CommunicatorCollectives.h).
  Tcp,
};

/// The TensorCollectives that `name` (auto, shm, tcp, or gloo: tcp's name
/// from when Gloo carried it) names, or nullopt.
std::optional<TensorCollectives>
parseTensorCollectives(const std::string &name);
/// The --tp-collectives spelling of `collectives` (auto, shm or tcp).
const char *tensorCollectivesName(TensorCollectives collectives);

/// The mesh of a job of `worldSize` ranks: `package`'s mesh (pipeline and
/// tensor axes) times `dataParallel` replicas in `meshOrder`
/// (dataParallelMesh). Throws when the job's size is not the mesh's or the
/// mesh has a context axis.
DeviceMesh jobMesh(const Package &package, int64_t dataParallel,
                   const std::vector<std::string> &meshOrder, int worldSize);

/// The members of `rank`'s pipeline, data-parallel and tensor-parallel
/// groups in `mesh`, in that order (RankGroups).
std::vector<std::vector<int64_t>> groupsOf(const DeviceMesh &mesh, int rank);

/// The ranks `rank` exchanges messages with: the other members of its
/// groups, increasing (RendezvousInfo::peers). The relation is symmetric.
std::vector<int> groupPeers(const DeviceMesh &mesh, int rank);

/// This rank's place in `mesh` (of `world`'s size) and its groups, split
/// from `world`, without the stage functions' collectives.
RankGroups splitIntoGroups(Communicator &world, DeviceMesh mesh);

/// Lays the job out (jobMesh) and connects this rank's groups, the stage
/// functions' collectives as `collectives` says (the same on every rank).
/// Throws where jobMesh does, or where shared memory is demanded but the
/// ranks of a tensor-parallel group cannot share it.
RankGroups
connectRankGroups(const Package &package, Communicator &world,
                  int64_t dataParallel,
                  const std::vector<std::string> &meshOrder,
                  TensorCollectives collectives = TensorCollectives::Auto);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_RANKGROUPS_H

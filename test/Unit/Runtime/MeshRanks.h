//===- MeshRanks.h - a mesh's ranks as threads of a test --------*- C++ -*-===//

#ifndef PP_TEST_UNIT_RUNTIME_MESHRANKS_H
#define PP_TEST_UNIT_RUNTIME_MESHRANKS_H

#include "ThreadRanks.h"

#include "runtime/training/RankGroups.h"

namespace pp::runtime::test {

/// Runs `body` on one thread per rank of `mesh`, each rank linked only with
/// its groups' members (groupPeers) as pp-rank links them, with its groups
/// split from the world; expects that no rank throws.
inline void
runMeshRanks(const DeviceMesh &mesh,
             const std::function<void(Communicator &, RankGroups &)> &body) {
  runRanks(static_cast<int>(mesh.deviceCount()),
           [&](Communicator &world) {
             RankGroups groups = splitIntoGroups(world, mesh);
             body(world, groups);
           },
           {std::chrono::seconds(30),
            [&](int rank) { return groupPeers(mesh, rank); }});
}

} // namespace pp::runtime::test

#endif // PP_TEST_UNIT_RUNTIME_MESHRANKS_H

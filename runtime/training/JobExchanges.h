//===- JobExchanges.h - exchanges among all of a job's ranks ----*- C++ -*-===//
//
// A rank links only with the members of its groups (RankGroups), so what
// all of a job's ranks exchange goes through the groups, along a tree
// rooted at job rank 0: a rank's tensor-parallel group leads to its first
// device, whose data-parallel group leads to the first replica, whose
// pipeline leads to stage 0 of replica 0, job rank 0. A group's first rank
// is its coordinate 0, so every rank has one path, and a level's group
// holds only ranks that take part in it.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_JOBEXCHANGES_H
#define PP_RUNTIME_TRAINING_JOBEXCHANGES_H

#include "runtime/training/RankGroups.h"

#include <cstddef>
#include <string>
#include <vector>

namespace pp::runtime {

/// The groups this rank takes part in on the tree to job rank 0, from the
/// leaves up: its tensor-parallel group, then, while this rank is its
/// group's first, the data-parallel group and the pipeline.
std::vector<Communicator *> levelsToRank0(RankGroups &groups);

/// On job rank 0, every rank's `mine` in job rank order; empty on the other
/// ranks. Every rank of the job calls it.
std::vector<std::string> gatherTextToRank0(RankGroups &groups,
                                           const std::string &mine);

/// Copies `size` bytes at `bytes` from job rank 0 to every rank. Every rank
/// of the job calls it.
void broadcastFromRank0(RankGroups &groups, void *bytes, size_t size);

/// Copies the `text` of `group`'s rank 0 to its other ranks' `text`. Every
/// rank of `group` calls it.
void broadcastText(Communicator &group, std::string &text);

/// Copies job rank 0's `text` to every rank's `text`. Every rank of the job
/// calls it.
void broadcastTextFromRank0(RankGroups &groups, std::string &text);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_JOBEXCHANGES_H

//===- RankContext.h - what every piece of a rank's run sees ----*- C++ -*-===//

#ifndef PP_RUNTIME_TRAINING_RANKCONTEXT_H
#define PP_RUNTIME_TRAINING_RANKCONTEXT_H

#include "runtime/communication/Communicator.h"
#include "runtime/data/Sampler.h"
#include "runtime/package/Package.h"
#include "runtime/training/RankGroups.h"
#include "runtime/training/RankStages.h"
#include "runtime/training/TrainerOptions.h"

#include <ostream>

namespace pp::runtime {

/// A rank of a job: the package it runs, the job (`world`) and its groups,
/// its stages, the run's options and batch layout, and where job rank 0
/// tells the user what happens.
struct RankContext {
  const Package &package;
  Communicator &world;
  RankGroups &groups;
  const RankStages &stages;
  const TrainerOptions &options;
  const BatchLayout &layout;
  std::ostream &log;

  /// Whether this rank prints and writes what the run reports (job rank
  /// 0).
  bool reports() const { return world.rank() == 0; }
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_RANKCONTEXT_H

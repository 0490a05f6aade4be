//===- BatchRef.h - a batch the schedule runs -------------------*- C++ -*-===//

#ifndef PP_RUNTIME_TRAINING_BATCHREF_H
#define PP_RUNTIME_TRAINING_BATCHREF_H

#include "runtime/data/MicrobatchSource.h"

#include <cstdint>

namespace pp::runtime {

/// A batch the schedule runs: a training step or an eval batch (its
/// index), where its samples come from, and whether dropout drops.
struct BatchRef {
  int64_t index;
  /// Tells its messages apart from every other batch's.
  int64_t messageStep;
  /// The position of its first sample in its source's order: a training
  /// step's consumed-samples cursor, eval batch e's e * B.
  int64_t start;
  MicrobatchSource *source;
  bool training;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_BATCHREF_H

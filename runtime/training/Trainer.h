//===- Trainer.h - one rank's training loop ---------------------*- C++ -*-===//
//
// Runs the stage of a package that belongs to this rank: feeds its stage
// functions in schedule order, accumulates gradients, synchronizes the loss
// and the global gradient norm, and updates the parameters.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINER_H
#define PP_RUNTIME_TRAINER_H

#include "runtime/checkpoints/PretrainedWeights.h"
#include "runtime/communication/Communicator.h"
#include "runtime/package/Package.h"
#include "runtime/training/Backend.h"
#include "runtime/training/ModelWeights.h"
#include "runtime/training/RankGroups.h"
#include "runtime/training/TrainerOptions.h"

#include <ostream>
#include <string>
#include <vector>

namespace pp::runtime {

/// Trains `package` on this rank of the job (`world`) in its place in
/// `groups`: its stage's messages go over the pipeline group, its
/// gradients and loss terms are summed over the data-parallel group. The
/// stage functions run on `backend` (whose stage library the package has
/// loaded). Rank 0 prints each step to `log` and writes the metrics file.
/// Throws std::runtime_error with a clear message on any failure.
void train(Package &package, Communicator &world, RankGroups &groups,
           Backend &backend, const TrainerOptions &options, std::ostream &log);

/// Throws std::runtime_error, naming the file and the problem, unless
/// `package` can train on the token datasets `data` names (none for
/// synthetic data): their format, checksum, size and vocabulary. Returns
/// warnings about data that is likely misread (a flat uint32 file read as
/// uint16).
std::vector<std::string> checkTrainingData(const Package &package,
                                           const DataOptions &data);

/// Throws std::runtime_error, saying what to do instead, when `package` is
/// forward-only.
void checkTrainable(const Package &package);

/// Throws std::runtime_error, saying how to get one, unless `package` is
/// forward-only.
void checkForwardOnly(const Package &package);

/// Runs the forward-only `package` once over `inputs` (host tensors, one
/// per Package::inputs entry, each holding `microbatches` microbatches of
/// the package's microbatch size along dimension 0, checked by the
/// caller) with dropout off. Returns on stage 0 the model's outputs in
/// Package::outputs order, each the microbatches' results concatenated
/// along dimension 0; other stages return none. Parameters start from
/// `weights` where its path is set. Throws std::runtime_error
/// for a training package and on any failure.
std::vector<TensorPtr> infer(Package &package, Communicator &world,
                             RankGroups &groups, Backend &backend,
                             const std::vector<pp_tensor *> &inputs,
                             int64_t microbatches,
                             const WeightsOptions &weights);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINER_H

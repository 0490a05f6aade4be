//===- CheckpointFuzzer.cpp - fuzzes the checkpoint state reader ----------===//
//
// Writes each input as the state.json of DIR/step-00000001, then does what
// pp-run --resume does with DIR before it compares the checkpoint with its
// model (runtime/checkpoints/CheckpointDirectory.h, CheckpointState.h):
// finds the newest complete checkpoint and reads its state. A state that
// reads with step 1 is complete, so it must be the one found.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/checkpoints/CheckpointState.h"

#include <filesystem>
#include <optional>
#include <stdexcept>

using namespace pp::runtime;

namespace {

/// A checkpoint directory holding the one checkpoint step-00000001.
struct CheckpointFolder : pp::fuzz::ScratchDirectory {
  CheckpointFolder() : checkpoint(path() + "/" + checkpointName(1)) {
    std::filesystem::create_directory(checkpoint);
  }
  std::string checkpoint;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const CheckpointFolder folder;
  folder.write(checkpointName(1) + "/" + kCheckpointStateFile, data, size);
  std::optional<CheckpointRef> newest = newestCheckpoint(folder.path());
  try {
    CheckpointState state = readCheckpointState(folder.checkpoint);
    if (state.step == 1 && (!newest || newest->step != 1))
      pp::fuzz::fail("a state of step 1 reads, but its checkpoint is not "
                     "complete");
  } catch (const std::runtime_error &) {
  }
  return 0;
}

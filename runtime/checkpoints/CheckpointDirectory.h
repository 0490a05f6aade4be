//===- CheckpointDirectory.h - atomic checkpoint directories ----*- C++ -*-===//
//
// A checkpoint directory DIR holds one subdirectory per checkpoint,
// DIR/step-<step, 8 or more digits>, each written atomically: its files go
// into DIR/.tmp-step-<step>-<random>, each fsync'd as it is written, with
// state.json last; then that directory is fsync'd, renamed to
// DIR/step-<step> and DIR is fsync'd. A crash at any moment leaves every
// earlier checkpoint whole, and at worst a .tmp- directory, which the next
// save removes. A checkpoint counts as complete only when its state.json
// parses and names its step (docs/checkpoints.md); CheckpointVerification.h
// checks its bytes and values before a resume.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CHECKPOINTDIRECTORY_H
#define PP_RUNTIME_CHECKPOINTDIRECTORY_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// The file a checkpoint writes last; its presence marks it complete.
inline constexpr char kCheckpointStateFile[] = "state.json";

/// A complete checkpoint: its step and its directory.
struct CheckpointRef {
  int64_t step = 0;
  std::string path;
};

/// "step-" and `step` with at least 8 digits.
std::string checkpointName(int64_t step);

/// The step of the checkpoint directory named `name`: the `step` in
/// [0, INT64_MAX] whose checkpointName is `name`. Nullopt for any other
/// name; then `problem` says what is wrong with a name of "step-" and
/// digits (a step out of range, or leading zeros pp does not write, as in
/// "step-000000012"), and is empty for other names.
std::optional<int64_t> parseCheckpointName(const std::string &name,
                                           std::string &problem);

/// Why checkpoints cannot be saved in `dir` ("" when they can): `dir`, or
/// the nearest of its ancestors that exists, is not a directory, or this
/// process cannot create entries in it. Probed by creating and removing a
/// temporary directory there, so that root on a read-only file system is
/// caught too; leaves nothing behind.
std::string checkpointDirectoryProblem(const std::string &dir);

/// Creates `dir` (with its parents) if missing, removes every stale
/// `.tmp-*` entry in it, and creates and returns a fresh
/// `dir/.tmp-step-<step>-<random>` for the checkpoint of `step`. Throws
/// std::runtime_error naming the path on failure.
std::string beginCheckpoint(const std::string &dir, int64_t step);

/// Writes `contents` to `path` and fsyncs it; throws std::runtime_error on
/// failure.
void writeFileSynced(const std::string &path, const std::string &contents);

/// Makes the checkpoint in `temporary` (from beginCheckpoint, with its
/// state file written) `dir`/checkpointName(step): fsyncs `temporary`,
/// renames it (replacing an older checkpoint of the same step) and fsyncs
/// `dir`. Returns the final path.
std::string commitCheckpoint(const std::string &dir,
                             const std::string &temporary, int64_t step);

/// Every directory in `dir` named as a checkpoint (checkpointName),
/// complete or not, by increasing step; none when `dir` does not exist.
/// When `misnamed` is given, it gets, per entry whose name is "step-" and
/// digits but no checkpointName, "'PATH' is no checkpoint name: WHY".
std::vector<CheckpointRef>
checkpointDirectories(const std::string &dir,
                      std::vector<std::string> *misnamed = nullptr);

/// The complete checkpoints in `dir`, by increasing step; none when `dir`
/// does not exist. Incomplete ones (no state file, or one that does not
/// parse or names another step) and other entries are ignored.
std::vector<CheckpointRef> completeCheckpoints(const std::string &dir);

/// The complete checkpoint of the highest step in `dir`, if any.
std::optional<CheckpointRef> newestCheckpoint(const std::string &dir);

/// Deletes all but the `keep` newest complete checkpoints in `dir`
/// (`keep` >= 1).
void keepNewestCheckpoints(const std::string &dir, int64_t keep);

} // namespace pp::runtime

#endif // PP_RUNTIME_CHECKPOINTDIRECTORY_H

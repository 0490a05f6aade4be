//===- CheckpointVerification.h - checked checkpoints -----------*- C++ -*-===//
//
// What a checkpoint's state.json promises about its files, and the checks
// that hold the files to it before a run resumes (docs/checkpoints.md):
//
//  - completeness: every file state.json lists (format version 3: a
//    parameter and an optimizer file per stage, CheckpointShards.h) is
//    there, and no tensor is in two of them; a missing one is refused
//    naming it, its stage and the rank that wrote it;
//  - integrity: state.json (format version 2 on) records, per file, the
//    SHA-256 of each tensor's stored bytes and of the file's metadata; the
//    digest of the bytes read under a name must be the one recorded for
//    that name, so a flipped byte, a truncated or swapped range (two
//    same-size tensors with their data_offsets exchanged) or an edited step
//    count is refused naming the file and the tensor;
//  - sanity: every value of the trained and frozen parameters and of the
//    optimizer state is finite, AdamW's second moments (exp_avg_sq) are not
//    negative, and every step count is an integer in [0, INT64_MAX].
//
// Rank 0 runs the checks on the newest checkpoint; one that fails them is
// skipped with a warning naming it, its step and why, and the next older
// one is tried (newestUsableCheckpoint).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CHECKPOINTVERIFICATION_H
#define PP_RUNTIME_CHECKPOINTVERIFICATION_H

#include "runtime/checkpoints/CheckpointDirectory.h"
#include "runtime/checkpoints/CheckpointShards.h"
#include "runtime/checkpoints/SafeTensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>

namespace pp::runtime {

/// The version of the checkpoint layout this pp writes (docs/checkpoints.md);
/// version 2 added the digests of state.json's "files", version 3 a file
/// per stage (CheckpointShards.h). Version 1 checkpoints still resume,
/// their values checked but their bytes not.
inline constexpr int kCheckpointFormatVersion = 3;
/// The oldest version this pp resumes from.
inline constexpr int kOldestReadableFormatVersion = 1;

/// The SHA-256 (hex) of a safetensors file's metadata: each key and its
/// value in key order, each followed by a NUL byte.
std::string metadataDigest(const std::map<std::string, std::string> &metadata);

/// What state.json's "files" records of the file `writer` finished:
/// {"metadata_sha256": ..., "tensors": {NAME: SHA-256, ...}}.
nlohmann::json fileRecord(const SafeTensorsWriter &writer);

/// Reads the step count `text` (a safetensors metadata value) of `what`;
/// throws std::runtime_error, naming `what`, unless it is an integer in
/// [0, INT64_MAX].
int64_t parseStepCount(const std::string &text, const std::string &what);

/// Reads and parses `checkpoint`'s state.json. Throws std::runtime_error,
/// naming the file, when it is missing or does not parse as a JSON
/// object, is of a format version this pp does not read, or lacks a step
/// and sample cursor that are integers in [0, INT64_MAX], or names another
/// step than its directory.
nlohmann::json readCheckpointState(const CheckpointRef &checkpoint);

/// Throws std::runtime_error, naming the file and the tensor, unless every
/// tensor of `file` is the one `record` (fileRecord) lists with the bytes
/// whose digest it records, and its metadata has the recorded digest.
void verifyDigests(const SafeTensorsFile &file, const nlohmann::json &record);

/// Throws std::runtime_error naming the file, the tensor and its first bad
/// element unless every value of every F32 tensor of `file` is finite,
/// except in the tensors `unchecked` names; or unless every tensor named
/// NAME/exp_avg_sq holds no negative value and every metadata key
/// NAME/step is a step count (parseStepCount).
void checkTensorValues(const SafeTensorsFile &file,
                       const std::set<std::string> &unchecked = {});

/// Runs every check on `checkpoint`, whose state.json is `state`
/// (readCheckpointState): every file state.json lists is there and opens
/// (checkpointFiles, CheckpointTensors::open), their digests (format
/// version 2 on) and their values (constants, which may hold -inf masks,
/// unchecked).
/// Throws std::runtime_error saying what is wrong.
void verifyCheckpoint(const CheckpointRef &checkpoint,
                      const nlohmann::json &state);

/// The newest checkpoint in `dir` that passes verifyCheckpoint; nullopt
/// when `dir` holds no checkpoint directory. Each newer one that fails is
/// reported on `warnings` (its path, step and why) and moved aside to
/// DIR/damaged-step-..., so that --keep-last never keeps it in place of
/// sound ones; then which steps are trained again. Misnamed directories
/// (parseCheckpointName) are reported too. Throws std::runtime_error,
/// listing each checkpoint and why, when `dir` holds checkpoints but none
/// passes.
std::optional<CheckpointRef> newestUsableCheckpoint(const std::string &dir,
                                                    std::ostream &warnings);

} // namespace pp::runtime

#endif // PP_RUNTIME_CHECKPOINTVERIFICATION_H

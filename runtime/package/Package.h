//===- Package.h - a compiled pipeline package ------------------*- C++ -*-===//
//
// What pp-opt --pp-emit writes and pp-run runs: manifest.json,
// parameters.bin and the stage libraries (see docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PACKAGE_H
#define PP_RUNTIME_PACKAGE_H

#include "runtime/core/FileDigest.h"
#include "runtime/core/InputFile.h"
#include "runtime/package/Manifest.h"
#include "runtime/package/StageCompiler.h"
#include "runtime/schedules/PipelineReport.h"

#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// A stage library to load: its path and the size and SHA-256 it must
/// have.
struct StageLibraryFile {
  std::string path;
  FileDigest digest;
  /// Where the digest is recorded, for messages: "manifest.json" or the
  /// cache's record.
  std::string recordedIn;
};

/// A loaded package: its manifest (Manifest.h), a training package's (a
/// loss and labels) or a forward-only one's (outputs), and what the runtime
/// derives from it. load() reads the manifest with readManifest, which
/// checks it against its schema (docs/runtime.md), then checks what the
/// trainer relies on across stages; it throws std::runtime_error with a
/// message that says what is wrong with which file, naming the field
/// (`stages[1].functions[0].args[2].dtype`) and what it expected. Files are
/// checked against their digests before they are used.
struct Package : Manifest {
  std::string directory;
  /// pp-partition's estimate of the bytes each stage saves per microbatch
  /// for its backward (stage_costs "saved_bytes"); empty, or nullopt for a
  /// stage, where the manifest has none.
  std::vector<std::optional<double>> estimatedSavedBytes;
  /// pp-partition's estimates per stage (stage_costs with times, memory
  /// and boundary tensors); empty unless every stage has times.
  std::vector<StageEstimate> stageEstimates;

  static Package load(const std::string &directory);
  /// The ranks of the pipeline axis.
  int64_t pipelineRanks() const;
  /// Whether the backward functions come split into backward_input and
  /// backward_weight.
  bool splitsBackward() const;
  /// Sets each parameter's gradientPartStages from the stages' gradient
  /// results (load() does; a package built in memory calls it once its
  /// stages are complete). Throws std::runtime_error unless the parts of
  /// each gradient are numbered 0, 1, ... and each returned once.
  void indexGradientParts();
  /// True for a package of `pp-compile infer=true`: no loss, no backward.
  bool forwardOnly() const { return lossKind.empty(); }
  /// True when the stages have eval functions (load() checks that all of
  /// them have one or none does): a training package that can evaluate
  /// held-out data without keeping anything for a backward.
  bool hasEvalFunctions() const {
    return !stages.empty() && stages.front().evalFunction();
  }
  /// Why the file `fileName` does not have the size and SHA-256 the manifest
  /// records ("libstages.so has 100 bytes, but manifest.json records
  /// 15656"), or "" when it does.
  std::string fileProblem(const std::string &fileName) const;
  /// The stage library of `target` the package carries, or nullopt when
  /// it has only that target's source.
  std::optional<StageLibraryFile> compiledLibrary(StageTarget target) const;
  /// Verifies `file` (the package's own library or one built from its
  /// source) and opens it: only this user or root can have written it or
  /// its directory, and its bytes have the digest. Resolves every stage
  /// function.
  void loadStageLibrary(const StageLibraryFile &file);
  /// Reads the initial value of `parameter` from parameters.bin into
  /// `tensor`, which has the parameter's global shape. The first call verifies the
  /// file; it stays open for the next parameter.
  void readParameter(const ParameterInfo &parameter, pp_tensor *tensor) const;

private:
  /// fileProblem of the open `file`, the package's `fileName`.
  std::string contentProblem(const std::string &fileName,
                             const InputFile &file) const;

  void *library = nullptr;
  mutable std::optional<InputFile> parameterFile;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_PACKAGE_H

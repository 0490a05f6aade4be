//===- Package.h - a compiled pipeline package ------------------*- C++ -*-===//
//
// What pp-opt --pp-emit writes and pp-run runs: manifest.json,
// parameters.bin and the stage libraries (see docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PACKAGE_H
#define PP_RUNTIME_PACKAGE_H

#include "runtime/communication/DeviceMesh.h"
#include "runtime/core/FileDigest.h"
#include "runtime/core/InputFile.h"
#include "runtime/core/Shapes.h"
#include "runtime/kernels/MemoryArena.h"
#include "runtime/package/StageCompiler.h"
#include "runtime/pp_kernels.h"
#include "runtime/schedules/Phase.h"
#include "runtime/schedules/PipelineReport.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pp::runtime {

/// What a stage function's argument or result is. Parameter, Frozen and
/// Constant tensors are the entries of the manifest's "parameters"; only
/// Parameter ones get gradients and optimizer steps.
enum class Role {
  /// Message parts and the runtime's own tensors.
  None,
  Input,
  Parameter,
  Frozen,
  Constant,
  Label,
  LossScale,
  Loss,
  Gradient,
  /// A value an earlier phase hands to a later one, matched by name.
  Saved,
  /// A model output of a forward-only package.
  Output,
};

/// The role spelled `name` ("input", "parameter", "frozen", "constant",
/// "label", "loss_scale", "loss", "gradient", "saved", "output"), or
/// nullopt.
std::optional<Role> parseRole(const std::string &name);
/// The manifest's spelling of `role` ("" for None).
const char *roleName(Role role);
/// Parameter, Frozen or Constant: loaded from parameters.bin or seeded by
/// name and passed to the stage functions like parameters.
bool isParameterRole(Role role);

/// A tensor the manifest names: an argument, a result or a message part.
struct TensorInfo {
  std::string name;
  Role role = Role::None;
  pp_dtype dtype = PP_DTYPE_F32;
  Shape shape;
  /// For an integer input that indexes a table (an embedding): its values
  /// must stay below this (the table's rows); 0 when nothing bounds them.
  int64_t indexBound = 0;
  /// For a gradient result: which part of its parameter's gradient it is
  /// (manifest "part"; 0 for a gradient in one part). See
  /// ParameterInfo::gradientPartStages.
  int64_t part = 0;
};

/// A model output of a forward-only package and the stage computing it.
struct OutputInfo {
  TensorInfo tensor;
  int64_t stage = 0;
};

/// A message a stage function sends or receives.
struct MessageInfo {
  bool send = false;
  int64_t peer = 0;
  std::vector<TensorInfo> tensors;
};

using StageFunctionPointer = void (*)(pp_frame *);

/// One generated stage function.
struct StageFunctionInfo {
  std::string symbol;
  Phase phase = Phase::Forward;
  std::vector<TensorInfo> args;
  std::vector<TensorInfo> results;
  std::vector<MessageInfo> messages;
  StageFunctionPointer entry = nullptr;
  /// Where its tensors live (manifest "memory_plan"); absent in packages
  /// compiled before memory plans.
  std::optional<MemoryPlan> memoryPlan;
};

/// A stage's functions in execution order of their phases.
struct StageInfo {
  std::vector<StageFunctionInfo> functions;
  /// The function of phase eval, or null (a package compiled before
  /// pp-derive-eval, or a forward-only one).
  const StageFunctionInfo *evalFunction() const;
};

/// How a parameter is split over a tensor axis of the mesh (manifest
/// "sharding"): dimension `dim` of the global shape, viewed as `blocks`
/// blocks, each split into `parts` (the axis' size) equal pieces; device r
/// holds piece r of every block, in block order (docs/runtime.md).
struct ParameterSharding {
  std::string axis;
  int64_t dim = 0;
  int64_t blocks = 1;
  int64_t parts = 1;
  /// The whole tensor's shape (manifest "global_shape"): dimension `dim`
  /// is `parts` times the local shape's.
  Shape globalShape;
};

/// An entry of the manifest's "parameters" (role Parameter, Frozen or
/// Constant).
struct ParameterInfo {
  /// Its name and its LOCAL shape: what a stage function takes on one
  /// device.
  TensorInfo tensor;
  /// The stage that owns it: the first of `stages`.
  int64_t stage = 0;
  /// The stages holding a copy, increasing: `stage` alone, or every stage
  /// using a tied weight (manifest "stages").
  std::vector<int64_t> stages = {0};
  /// gradientPartStages[p]: the stage whose backward returns part p of the
  /// gradient. A parameter that several nodes use (a tied embedding and LM
  /// head) has a part per node, in program order, which the trainer sums
  /// over the microbatches each on its own and adds in part order at the
  /// end of the step; others have one part, or none when no stage computes
  /// a gradient (frozen, constant, unused).
  std::vector<int64_t> gradientPartStages = {};
  bool fromFile = false;
  size_t offset = 0;
  size_t bytes = 0;
  /// Set for a parameter sharded over a tensor axis; nullopt for one that
  /// every device holds whole (replicated).
  std::optional<ParameterSharding> sharding = std::nullopt;

  /// True when `at` holds a copy.
  bool heldBy(int64_t at) const {
    return std::find(stages.begin(), stages.end(), at) != stages.end();
  }
  /// True when several stages hold copies.
  bool isTied() const { return stages.size() > 1; }
  /// The shape of the whole tensor: what parameters.bin, checkpoints and
  /// parameter files hold.
  const Shape &globalShape() const {
    return sharding ? sharding->globalShape : tensor.shape;
  }
};

/// A stage library to load: its path and the size and SHA-256 it must
/// have.
struct StageLibraryFile {
  std::string path;
  FileDigest digest;
  /// Where the digest is recorded, for messages: "manifest.json" or the
  /// cache's record.
  std::string recordedIn;
};

/// The format version of the manifests this runtime reads.
constexpr int kPackageFormatVersion = 5;

/// A loaded package (manifest format version 5): a training package (a
/// loss and labels) or a forward-only one (outputs). load() checks the whole
/// manifest against its schema (docs/runtime.md) and throws
/// std::runtime_error with a message that says what is wrong with which file,
/// naming the field (`stages[1].functions[0].args[2].dtype`) and what it
/// expected. Files are checked against their digests before they are used.
struct Package {
  std::string directory;
  /// The devices the package runs on; its pipeline axis has one rank per
  /// distinct entry of stageRanks.
  DeviceMesh mesh;
  /// The model's stages (chunks), in model order.
  int64_t numStages = 0;
  /// stageRanks[s]: the pipeline rank running stage s (manifest
  /// "stage_ranks"; absent: stage s on rank s). With virtual stages a rank
  /// runs several.
  std::vector<int64_t> stageRanks;
  int64_t microbatchSize = 0;
  std::string lossKind;
  std::string lossOutput;
  int64_t ignoreIndex = -100;
  /// Classes of a cross_entropy loss (the logits' last dimension).
  int64_t lossClasses = 0;
  /// In the model's order for a forward-only package.
  std::vector<TensorInfo> inputs;
  /// Training packages only.
  TensorInfo labels;
  /// Forward-only packages only: the model's outputs in its order.
  std::vector<OutputInfo> outputs;
  /// Every parameter, frozen or constant tensor, in manifest order.
  std::vector<ParameterInfo> parameters;
  /// The model's floating-point tensors that the compiler held constant
  /// (ONNX initializers that are no parameters, TorchScript buffers) and
  /// their element counts, from the manifest's optional "held_constants".
  std::vector<std::pair<std::string, int64_t>> heldConstants;
  /// Trained tensors that an exporter's optimizer folded from a parameter
  /// the model no longer has, by name: that parameter's name (manifest's
  /// optional "folded_parameters"; --weights names it when they are
  /// missing).
  std::map<std::string, std::string> foldedParameters;
  /// Indexed by stage.
  std::vector<StageInfo> stages;
  /// Every file of the package but the manifest, by name.
  std::map<std::string, FileDigest> files;
  /// The targets whose stage library the package carries compiled (the
  /// manifest's "libraries" with a "library"); the others have only their
  /// source, which a run compiles when it needs it (StageLibraryCache.h).
  std::set<StageTarget> compiledTargets;
  /// pp-partition's estimate of the bytes each stage saves per microbatch
  /// for its backward (stage_costs "saved_bytes"); empty, or nullopt for a
  /// stage, where the manifest has none.
  std::vector<std::optional<double>> estimatedSavedBytes;
  /// pp-partition's estimates per stage (stage_costs with times, memory
  /// and boundary tensors); empty where the manifest has none.
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

//===- Manifest.h - what a package's manifest.json holds --------*- C++ -*-===//
//
// The one definition of a pipeline package's manifest (docs/runtime.md):
// plain structs for everything it records, its one JSON writer, which
// pp-emit-package calls, and its one reader, which Package::load calls.
// Both live in Manifest.cpp, the only code that reads or writes a
// manifest key.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PACKAGE_MANIFEST_H
#define PP_RUNTIME_PACKAGE_MANIFEST_H

#include "runtime/communication/DeviceMesh.h"
#include "runtime/core/FileDigest.h"
#include "runtime/core/Shapes.h"
#include "runtime/kernels/MemoryArena.h"
#include "runtime/package/StageCompiler.h"
#include "runtime/pp_kernels.h"
#include "runtime/schedules/Phase.h"

#include <nlohmann/json_fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pp::runtime {

/// The format version of the manifests this runtime writes and reads.
constexpr int kPackageFormatVersion = 7;

/// The manifest's file name in a package directory.
constexpr const char *kManifestFileName = "manifest.json";
/// The file holding the parameters' initial values, which every package
/// has (possibly empty).
constexpr const char *kParametersFileName = "parameters.bin";

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
  /// A stage function argument: the compute-type copy (its dtype) of the
  /// parameter (frozen, constant tensor) of its name, which the runtime
  /// converts once per step and passes to every call (docs/precision.md).
  ComputeCopy,
};

/// The role spelled `name` ("input", "parameter", "frozen", "constant",
/// "label", "loss_scale", "loss", "gradient", "saved", "output",
/// "compute_copy"), or
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
  /// (manifest "part", written where a gradient comes in several parts; 0
  /// for a gradient in one part). See ParameterInfo::gradientPartStages.
  int64_t part = 0;
};

/// A model output of a forward-only package and the stage computing it.
struct OutputInfo {
  /// Its role is Output (the manifest does not spell it).
  TensorInfo tensor;
  int64_t stage = 0;
};

/// A message a stage function sends or receives.
struct MessageInfo {
  bool send = false;
  int64_t peer = 0;
  /// Their role is None.
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
  /// Not in the manifest: the loaded function, which
  /// Package::loadStageLibrary resolves by `symbol`.
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
  /// Not written: the reader takes it from the mesh's axis.
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
  /// Not in the manifest (Package::indexGradientParts derives it from the
  /// stages' gradient results): gradientPartStages[p] is the stage whose
  /// backward returns part p of the gradient. A parameter that several
  /// nodes use (a tied embedding and LM head) has a part per node, in
  /// program order, which the trainer sums over the microbatches each on
  /// its own and adds in part order at the end of the step; others have
  /// one part, or none when no stage computes a gradient (frozen,
  /// constant, unused).
  std::vector<int64_t> gradientPartStages = {};
  /// Its initial value is in parameters.bin (manifest "init": "file") at
  /// `offset`, `bytes` long; otherwise it is seeded by its name.
  bool fromFile = false;
  size_t offset = 0;
  size_t bytes = 0;
  /// Set for a parameter sharded over a tensor axis; nullopt for one that
  /// every device holds whole (replicated).
  std::optional<ParameterSharding> sharding = std::nullopt;
  /// The type the model stores it in when that is not `tensor.dtype`: a
  /// bf16 or f16 weight trained as an f32 master copy (manifest
  /// "model_dtype"), which --save-weights writes back in its type.
  pp_dtype modelDtype = PP_DTYPE_F32;

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

/// pp-partition's estimate for one stage (an entry of the manifest's
/// informational "stage_costs", as pp.stage_costs holds it; Passes.td's
/// pp-partition describes the fields). Each field is absent from a
/// program partitioned by hand. Times are in microseconds per microbatch,
/// sizes in bytes.
struct StageCost {
  std::optional<int64_t> rank;
  std::optional<std::string> firstNode, lastNode;
  std::optional<double> flops, bytes, sentBytes;
  /// The values sent to later stages: name and bytes.
  std::optional<std::vector<std::pair<std::string, double>>> boundary;
  /// Activations saved per microbatch for the backward.
  std::optional<double> savedBytes;
  std::optional<int64_t> inFlight;
  std::optional<double> parameterCount, parameterBytes, gradientBytes,
      optimizerBytes;
  /// The data-parallel degree and ZeRO level the memory assumed, and the
  /// stage's simulated peak bytes under them.
  std::optional<int64_t> dataParallel, zeroLevel;
  std::optional<double> peakBytes;
  std::optional<double> estimatedMicros, forwardMicros, backwardInputMicros,
      backwardWeightMicros;
  /// The schedule and microbatches the estimate assumed.
  std::optional<std::string> schedule;
  std::optional<int64_t> microbatches;
  /// What the stage's backward recomputes (pp-recompute: full, selective or
  /// ops) and, for ops, the regular expression naming them; absent when it
  /// recomputes nothing.
  std::optional<std::string> recompute, recomputeOps;
};

/// Everything a package's manifest.json records.
struct Manifest {
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
  /// The type the stages compute in (pp-apply-precision): "f32", "bf16" or
  /// "fp16" (manifest "precision"; absent: "f32"). Parameters are f32
  /// master copies in every case; an fp16 run scales its loss
  /// (LossScaler.h).
  std::string precision = "f32";
  /// "mse" or "cross_entropy"; empty for a forward-only package, which has
  /// no loss.
  std::string lossKind;
  std::string lossOutput;
  int64_t ignoreIndex = -100;
  /// Classes of a cross_entropy loss (the logits' last dimension); 0 when
  /// not recorded.
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
  /// their element counts (manifest "held_constants", informational).
  std::vector<std::pair<std::string, int64_t>> heldConstants;
  /// Trained tensors that an exporter's optimizer folded from a parameter
  /// the model no longer has, by name: that parameter's name (manifest
  /// "folded_parameters"; --weights names it when they are missing).
  std::map<std::string, std::string> foldedParameters;
  /// Indexed by stage.
  std::vector<StageInfo> stages;
  /// Per stage, or empty (manifest "stage_costs", informational).
  std::vector<StageCost> stageCosts;
  /// The targets whose stage library source the package carries (the
  /// manifest's "libraries"), and those of them whose library it carries
  /// compiled; a run compiles the others when it needs them
  /// (StageLibraryCache.h).
  std::set<StageTarget> sourceTargets;
  std::set<StageTarget> compiledTargets;
  /// Every file of the package but the manifest, by name; parameters.bin
  /// among them.
  std::map<std::string, FileDigest> files;
};

/// The manifest `text` (manifest.json's contents), checked against the
/// schema. Throws std::runtime_error "manifest.json: KEY: what was
/// expected, found what" naming the key's path
/// (`stages[1].functions[0].args[2].dtype`), or saying that the text is
/// not JSON or of another format version.
Manifest readManifest(const std::string &text);

/// `manifest` as manifest.json's text. Throws std::runtime_error as
/// checkManifestStrings does.
std::string writeManifest(const Manifest &manifest);

/// Throws std::runtime_error naming the first string of `manifest` (a
/// tensor or file name) that is not valid UTF-8, which JSON cannot hold,
/// and where it is: "cannot write the manifest: parameters[2].name
/// ("w\FF2") is not valid UTF-8, which JSON needs; rename it".
void checkManifestStrings(const Manifest &manifest);

/// The entry `value` of "stage_costs", checked as readManifest checks it;
/// `path` ("pp.stage_costs[1]") starts its messages. For pp-emit-package,
/// which converts pp.stage_costs to JSON without knowing its fields.
StageCost readStageCost(const nlohmann::json &value, const std::string &path);

} // namespace pp::runtime

#endif // PP_RUNTIME_PACKAGE_MANIFEST_H

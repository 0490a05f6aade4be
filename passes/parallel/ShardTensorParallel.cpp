//===- ShardTensorParallel.cpp - pp-shard-tensor-parallel -----------------===//
//
// Splits the pipeline program's stages over a tensor axis: seeds
// parameter shardings (column-parallel projections, vocabulary-parallel
// embeddings and LM heads, kept only when they need no more all-gathers),
// propagates layouts through every op by its sharding rule, inserts the
// collectives where a user needs another layout than its producer gives,
// and rewrites the program to per-device types.
//
//===----------------------------------------------------------------------===//

#include "passes/parallel/Passes.h"
#include "passes/parallel/LayoutPropagation.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPOps.h"
#include "passes/ProgramUtils.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "pp-shard-tensor-parallel"

namespace pp {
#define GEN_PASS_DEF_SHARDTENSORPARALLEL
#include "passes/parallel/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

using Layout = nn::TensorLayout;
using LayoutMap = ParameterLayouts;

struct ShardTensorParallelPass
    : public pp::impl::ShardTensorParallelBase<ShardTensorParallelPass> {
  using ShardTensorParallelBase::ShardTensorParallelBase;

  void runOnOperation() override {
    if (tp == 1)
      return;
    ModuleOp module = getOperation();
    if (tp < 1) {
      module.emitError() << "pp-shard-tensor-parallel: tp=" << tp.getValue()
                         << " devices; give tp >= 1";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> program = getProgram(module);
    if (failed(program))
      return signalPassFailure();
    main = *program;
    auto mesh = module.lookupSymbol<MeshOp>(kPipelineMeshName);
    if (!mesh || main.getBody().front().getOps<StageOp>().empty()) {
      module.emitError("pp-shard-tensor-parallel: the program has no "
                       "pipeline stages; run pp-partition and "
                       "pp-insert-send-recv first (or use --pp-compile)");
      return signalPassFailure();
    }
    if (mesh.lookupAxis(kTensorAxis)) {
      mesh.emitError() << "pp-shard-tensor-parallel: the mesh already has an "
                          "axis \"" << kTensorAxis << "\"";
      return signalPassFailure();
    }
    LayoutMap seeds;
    if (failed(checkSequenceLength()) || failed(handShardings(seeds)) ||
        failed(chooseSeeds(seeds)))
      return signalPassFailure();
    FailureOr<PropagationResult> final =
        propagateLayouts(main, tp, sequenceParallel, seeds, /*rewrite=*/true);
    if (failed(final))
      return signalPassFailure();
    SmallVector<Attribute> axes(mesh.getAxes().begin(), mesh.getAxes().end());
    axes.push_back(
        MeshAxisAttr::get(&getContext(), kTensorAxis, tp, AxisKind::tensor));
    mesh.setAxesAttr(ArrayAttr::get(&getContext(), axes));
    updateSavedBytes();
    reportParameters(final->parameters);
  }

private:
  func::FuncOp main;

  /// Under sequence parallelism, the sequence (dimension 1 of every input
  /// of rank 2 or more) must split over the tensor axis.
  LogicalResult checkSequenceLength() {
    if (!sequenceParallel)
      return success();
    for (BlockArgument arg : main.getArguments()) {
      if (argumentRole(main, arg.getArgNumber()) != kRoleInput)
        continue;
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() < 2 || type.getDimSize(1) % tp == 0)
        continue;
      int64_t length = type.getDimSize(1);
      int64_t padded = llvm::alignTo(length, tp);
      return main.emitError()
             << "pp-shard-tensor-parallel: sequence parallelism (sp=true) "
                "splits the sequence over tp = "
             << tp.getValue() << " devices, but input '"
             << argumentName(main, arg.getArgNumber())
             << "' has sequence length " << length << " (dimension 1), which "
             << tp.getValue() << " does not divide; pad the sequence to "
             << padded
             << " with pp-run --pad-sequence (or compile for a padded length "
                "and pad the data), or use a tp that divides "
             << length << ", or drop sp";
    }
    return success();
  }

  /// `shard=NAME=DIM` seeds.
  LogicalResult handShardings(LayoutMap &seeds) {
    for (const std::string &entry : shard) {
      StringRef text = entry;
      auto [name, dimText] = text.rsplit('=');
      int64_t dim = 0;
      if (dimText.empty() || name.empty() || dimText.getAsInteger(10, dim))
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << " is not NAME=DIM (a parameter name and a dimension)";
      std::optional<unsigned> index;
      for (BlockArgument arg : main.getArguments())
        if (argumentName(main, arg.getArgNumber()) == name &&
            (argumentRole(main, arg.getArgNumber()) == kRoleParameter ||
             argumentRole(main, arg.getArgNumber()) == kRoleFrozen))
          index = arg.getArgNumber();
      if (!index)
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << ": the model has no parameter named '" << name
               << "' (pp-opt --pp-compile=... --mlir-print-ir-after-all "
                  "lists them)";
      auto type = cast<RankedTensorType>(main.getArgument(*index).getType());
      Layout layout = Layout::sharded(dim);
      if (dim < 0 || dim >= type.getRank())
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << ": parameter '" << name << "' of type " << type
               << " has no dimension " << dim;
      if (!nn::layoutFits(type, layout, tp))
        return main.emitError()
               << "pp-shard-tensor-parallel: shard=" << entry
               << ": dimension " << dim << " of parameter '" << name << "' ("
               << type << ") has size " << type.getDimSize(dim)
               << ", which tp = " << tp.getValue()
               << " does not divide; shard another dimension or use a tp "
                  "that divides it";
      seeds[*index] = layout;
    }
    return success();
  }

  /// A candidate seed: parameters sharded together (the projections of one
  /// input: q, k and v, or a gated MLP's gate and up projections), each
  /// along its output dimension, in one of `blockCounts` block counts.
  struct Candidate {
    /// (@main argument, dimension) of each parameter.
    SmallVector<std::pair<unsigned, int64_t>> members;
    SmallVector<int64_t> blockCounts;
    /// A token embedding or an LM head: its dimension is the vocabulary.
    bool vocabulary = false;

    /// `seeds` with every member laid out in `blocks` blocks.
    LayoutMap seeded(const LayoutMap &seeds, int64_t blocks) const {
      LayoutMap tried = seeds;
      for (auto [parameter, dim] : members)
        tried[parameter] = Layout::sharded(dim, blocks);
      return tried;
    }
  };

  /// The parameter `value` (a stage block argument, or its cast to the
  /// compute type under a reduced precision: pp-apply-precision's copy of
  /// a weight) is, if any.
  std::optional<unsigned> parameterArgument(StageOp stage, Value value) {
    if (Operation *copy = value.getDefiningOp())
      if (Value converted = convertedOperand(copy))
        value = converted;
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != &stage.getBody().front())
      return std::nullopt;
    auto outer = dyn_cast<BlockArgument>(stage.getInputs()[arg.getArgNumber()]);
    if (!outer || outer.getOwner() != &main.getBody().front() ||
        !isModelParameter(main, outer.getArgNumber()) ||
        argumentRole(main, outer.getArgNumber()) == kRoleConstant)
      return std::nullopt;
    return outer.getArgNumber();
  }

  /// The seeds the forward stages' ops propose (token embeddings and
  /// column-parallel projections, grouped by their input), in program
  /// order, each parameter once.
  SmallVector<Candidate> candidates(const LayoutMap &fixed) {
    SmallVector<Candidate> found;
    llvm::DenseSet<unsigned> seen;
    DenseMap<Value, size_t> byInput;
    for (auto [index, layout] : fixed)
      seen.insert(index);
    for (StageOp stage : main.getBody().front().getOps<StageOp>()) {
      if (stage.getPhase() != StagePhase::forward)
        continue;
      stage.getBody().walk([&](nn::ShardingRuleOpInterface rule) {
        std::optional<nn::ShardingSeed> seed = rule.shardingSeed();
        if (!seed || (seed->group && parameterArgument(stage, seed->group)))
          return;
        auto parameter =
            parameterArgument(stage, rule->getOperand(seed->operand));
        if (!parameter || !seen.insert(*parameter).second)
          return;
        std::pair<unsigned, int64_t> member = {*parameter, seed->dim};
        if (seed->group) {
          auto group = byInput.find(seed->group);
          if (group != byInput.end()) {
            found[group->second].members.push_back(member);
            return;
          }
          byInput[seed->group] = found.size();
        }
        found.push_back({{member}, seed->blockCounts, seed->vocabulary});
      });
    }
    return found;
  }

  /// All-gathers a propagation with `seeds` needs on the tensor axis,
  /// without sequence parallelism (whose all-gathers before each
  /// column-parallel block are its design, not a sign of a bad seed).
  PropagationResult trial(const LayoutMap &seeds) {
    // A trial never rewrites, so it cannot fail.
    PropagationResult result =
        *propagateLayouts(main, tp, /*sequenceParallel=*/false, seeds,
                          /*rewrite=*/false);
    LLVM_DEBUG({
      llvm::dbgs() << "trial, seeds:";
      for (auto [index, layout] : seeds)
        llvm::dbgs() << " " << argumentName(main, index) << "="
                     << layout.describe();
      llvm::dbgs() << ": " << result.gathers << " all-gathers "
                   << result.firstGather << "\n";
    });
    return result;
  }

  /// Keeps each candidate whose sharding needs no more all-gathers than
  /// the program without it. A vocabulary (token embedding, LM head) or
  /// attention heads that the tensor axis does not divide are errors.
  LogicalResult chooseSeeds(LayoutMap &seeds) {
    int64_t baseline = trial(seeds).gathers;
    for (const Candidate &candidate : candidates(seeds)) {
      auto typeOf = [&](unsigned parameter) {
        return cast<RankedTensorType>(main.getArgument(parameter).getType());
      };
      auto fitsAll = [&](int64_t blocks) {
        return llvm::all_of(candidate.members, [&](auto member) {
          return nn::layoutFits(typeOf(member.first),
                            Layout::sharded(member.second, blocks), tp);
        });
      };
      auto [first, dim] = candidate.members.front();
      StringRef name = argumentName(main, first);
      if (candidate.vocabulary && !fitsAll(1)) {
        int64_t size = typeOf(first).getDimSize(dim);
        return main.emitError()
               << "pp-shard-tensor-parallel: the vocabulary (" << size
               << " entries along dimension " << dim << " of parameter '"
               << name << "', " << typeOf(first)
               << ") does not split over tp = " << tp.getValue()
               << " devices; pad the vocabulary to "
               << llvm::alignTo(size, tp) << " (a multiple of "
               << tp.getValue() << ") or use a tp that divides " << size;
      }
      std::string sizeProblem;
      for (int64_t blocks : candidate.blockCounts) {
        if (!fitsAll(blocks))
          continue;
        LayoutMap tried = candidate.seeded(seeds, blocks);
        PropagationResult result = trial(tried);
        if (result.gathers <= baseline) {
          seeds = tried;
          baseline = result.gathers;
          sizeProblem.clear();
          break;
        }
        if (sizeProblem.empty())
          sizeProblem = result.sizeProblem;
      }
      if (!sizeProblem.empty())
        return main.emitError()
               << "pp-shard-tensor-parallel: parameter '" << name << "' ("
               << typeOf(first) << ") would be column-parallel, but "
               << sizeProblem
               << "; use a tp that divides the number of attention heads";
    }
    return success();
  }

  /// Recounts each stage's `saved_bytes` in `pp.stage_costs` (what its
  /// backward takes from its forward per microbatch: forward results,
  /// values received in the forward, graph inputs) at the per-device sizes,
  /// for the runtime's activation-memory estimate.
  void updateSavedBytes() {
    auto costs = main->getAttrOfType<ArrayAttr>(kStageCostsAttrName);
    if (!costs)
      return;
    SmallVector<Attribute> updated(costs.begin(), costs.end());
    for (StageOp stage : main.getBody().front().getOps<StageOp>()) {
      int64_t index = stage.getStage();
      if (stage.getPhase() != StagePhase::backward ||
          index >= static_cast<int64_t>(updated.size()))
        continue;
      double bytes = 0;
      llvm::DenseSet<Value> counted;
      for (Value operand : stage.getInputs()) {
        if (!isSavedFromForward(operand, index) ||
            !counted.insert(operand).second)
          continue;
        auto type = cast<RankedTensorType>(operand.getType());
        bytes += static_cast<double>(type.getNumElements()) *
                 std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
      }
      NamedAttrList entry(cast<DictionaryAttr>(updated[index]));
      entry.set("saved_bytes", FloatAttr::get(Float64Type::get(&getContext()),
                                              bytes));
      updated[index] = entry.getDictionary(&getContext());
    }
    main->setAttr(kStageCostsAttrName, ArrayAttr::get(&getContext(), updated));
  }

  /// True when the backward of stage `index` takes `value` from its
  /// forward (pp-outline-stages makes it a `saved` value).
  bool isSavedFromForward(Value value, int64_t index) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return argumentRole(main, arg.getArgNumber()) == kRoleInput;
    if (auto transfer = value.getDefiningOp<TransferOp>()) {
      auto producer = transfer.getValues().front().getDefiningOp<StageOp>();
      return producer && producer.getPhase() == StagePhase::forward;
    }
    auto producer = value.getDefiningOp<StageOp>();
    return producer && static_cast<int64_t>(producer.getStage()) == index &&
           producer.getPhase() == StagePhase::forward;
  }

  /// A remark per sharded parameter.
  void reportParameters(const LayoutMap &layouts) {
    int64_t sharded = 0;
    for (auto [index, layout] : layouts)
      sharded += layout.isSharded();
    main.emitRemark() << "pp-shard-tensor-parallel: tp = " << tp.getValue() << ", "
                      << sharded << " of "
                      << llvm::count_if(main.getArguments(),
                                        [&](BlockArgument arg) {
                                          return isModelParameter(
                                              main, arg.getArgNumber());
                                        })
                      << " parameters sharded";
  }
};

} // namespace

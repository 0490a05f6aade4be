//===- PartitionReport.cpp - pp-opt --pp-report ---------------------------===//

#include "tools/pp-opt/PartitionReport.h"


#include "dialects/pp/IR/PPDialect.h"
#include "runtime/schedules/PipelineReport.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <sstream>

using namespace mlir;
using pp::runtime::StageEstimate;

namespace pp {

namespace {

/// The `pp.stage_costs` array: the module's, else @main's.
ArrayAttr findStageCosts(ModuleOp module) {
  if (auto costs = module->getAttrOfType<ArrayAttr>(kStageCostsAttrName))
    return costs;
  for (auto function : module.getOps<func::FuncOp>())
    if (auto costs = function->getAttrOfType<ArrayAttr>(kStageCostsAttrName))
      return costs;
  return {};
}

/// The stages' entries of `pp.stage_costs`, the schedule and microbatches
/// the partition was made for, or failure after an error.
FailureOr<std::vector<StageEstimate>>
readStageEstimates(ModuleOp module, std::string &schedule,
                   int64_t &microbatches) {
  ArrayAttr costs = findStageCosts(module);
  if (!costs)
    return module.emitError("nothing to report: the module has no ")
           << kStageCostsAttrName << "; run --pp-compile or pp-partition";
  std::vector<StageEstimate> entries;
  for (auto [stage, attr] : llvm::enumerate(costs)) {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    auto numberOf = [&](StringRef name) -> FailureOr<double> {
      Attribute value = dict ? dict.get(name) : Attribute();
      if (auto number = dyn_cast_or_null<FloatAttr>(value))
        return number.getValueAsDouble();
      if (auto number = dyn_cast_or_null<IntegerAttr>(value))
        return static_cast<double>(number.getInt());
      return module.emitError("stage ")
             << stage << " of " << kStageCostsAttrName << " has no number '"
             << name << "'; partition it again with this pp-partition";
    };
    StageEstimate entry;
    FailureOr<double> fields[] = {
        numberOf("rank"),           numberOf("forward_us"),
        numberOf("backward_input_us"), numberOf("backward_weight_us"),
        numberOf("estimated_us"),   numberOf("parameter_count"),
        numberOf("parameter_bytes"), numberOf("gradient_bytes"),
        numberOf("optimizer_bytes"), numberOf("saved_bytes"),
        numberOf("in_flight")};
    if (llvm::any_of(fields, [](const FailureOr<double> &field) {
          return failed(field);
        }))
      return failure();
    entry.rank = static_cast<int64_t>(*fields[0]);
    entry.forwardSeconds = *fields[1] / 1e6;
    entry.backwardInputSeconds = *fields[2] / 1e6;
    entry.backwardWeightSeconds = *fields[3] / 1e6;
    entry.totalSeconds = *fields[4] / 1e6;
    entry.parameterCount = *fields[5];
    entry.parameterBytes = *fields[6];
    entry.gradientBytes = *fields[7];
    entry.optimizerBytes = *fields[8];
    entry.savedBytes = *fields[9];
    entry.inFlight = static_cast<int64_t>(*fields[10]);
    if (auto first = dict.getAs<StringAttr>("first_node"))
      entry.firstNode = first.str();
    if (auto last = dict.getAs<StringAttr>("last_node"))
      entry.lastNode = last.str();
    if (auto boundary = dict.getAs<ArrayAttr>("boundary"))
      for (auto value : boundary.getAsRange<DictionaryAttr>())
        entry.boundary.emplace_back(
            value.getAs<StringAttr>("name").str(),
            value.getAs<FloatAttr>("bytes").getValueAsDouble());
    if (auto degree = dict.getAs<IntegerAttr>("data_parallel"))
      entry.dataParallel.degree = degree.getInt();
    if (auto level = dict.getAs<IntegerAttr>("zero_level"))
      entry.dataParallel.zeroLevel = static_cast<int>(level.getInt());
    if (auto peak = dict.getAs<FloatAttr>("peak_bytes"))
      entry.peakBytes = peak.getValueAsDouble();
    if (auto name = dict.getAs<StringAttr>("schedule"))
      schedule = name.str();
    if (auto count = dict.getAs<IntegerAttr>("microbatches"))
      microbatches = count.getInt();
    entries.push_back(std::move(entry));
  }
  return entries;
}

} // namespace

/// The import's record of what trains and what it held constant
/// (kImportRecordAttrName): counts, elements, and the names of the
/// constants.
static void printInitializers(ModuleOp module, std::ostringstream &text) {
  auto record = module->getAttrOfType<DictionaryAttr>(
      kImportRecordAttrName);
  if (!record)
    return;
  auto line = [&](StringRef kind, const char *what, bool names) {
    auto entries = record.getAs<DictionaryAttr>(kind);
    int64_t elements = 0;
    std::string list;
    for (NamedAttribute entry : entries ? entries.getValue()
                                        : ArrayRef<NamedAttribute>()) {
      elements += cast<IntegerAttr>(entry.getValue()).getInt();
      list += (list.empty() ? ": " : ", ") + entry.getName().str();
    }
    size_t count = entries ? entries.size() : 0;
    text << what << " " << count
         << (count == 1 ? " float tensor (" : " float tensors (") << elements
         << " elements)"
         << (names ? list : "") << "\n";
  };
  line("trained", "trains", /*names=*/false);
  line("held", "holds constant", /*names=*/true);
}

LogicalResult printPartitionReport(ModuleOp module, llvm::raw_ostream &os) {
  std::string schedule = "1f1b";
  int64_t microbatches = 1;
  FailureOr<std::vector<StageEstimate>> stages =
      readStageEstimates(module, schedule, microbatches);
  if (failed(stages))
    return failure();
  std::ostringstream text;
  runtime::printStageReport(*stages, text);
  // The schedule the partition was made for, over messages between
  // neighbouring stages.
  runtime::PipelineLayout layout;
  layout.stageRanks.clear();
  for (const StageEstimate &stage : *stages) {
    layout.stageRanks.push_back(stage.rank);
    layout.ranks = std::max(layout.ranks, stage.rank + 1);
  }
  layout.microbatches = microbatches;
  runtime::ScheduleKind kind = *runtime::parseScheduleKind(schedule);
  bool split = runtime::needsSplitBackward(kind);
  const runtime::DataParallelism &dataParallel = stages->front().dataParallel;
  if (std::string problem = runtime::dataParallelProblem(dataParallel);
      !problem.empty())
    return module.emitError(kStageCostsAttrName)
           << " gives data_parallel and zero_level: " << problem;
  if (std::string problem = runtime::scheduleProblem(kind, layout, split);
      !problem.empty()) {
    text << "schedule " << schedule << ": " << problem << "\n";
  } else {
    runtime::MessageGraph messages =
        runtime::chainMessages(layout.stages());
    runtime::ScheduleTable table =
        runtime::buildSchedule(kind, layout, messages, split);
    runtime::addDataParallelActions(table, layout, dataParallel);
    runtime::SimulatedStep ideal =
        runtime::simulateEqualStages(table, layout, messages);
    runtime::SimulatedStep predicted = runtime::simulateSchedule(
        table, layout, messages, runtime::costsOf(*stages));
    runtime::printScheduleReport(
        *stages,
        schedule + " with " + std::to_string(microbatches) + " microbatches",
        ideal, predicted, text);
  }
  printInitializers(module, text);
  os << text.str();
  return success();
}

} // namespace pp

//===- PartitionReport.cpp - what each stage and rank costs ---------------===//

#include "passes/pipeline/PartitionReport.h"

#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

using namespace mlir;

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

} // namespace

FailureOr<std::vector<StageCostEntry>> readStageCostEntries(ModuleOp module) {
  ArrayAttr costs = findStageCosts(module);
  if (!costs)
    return module.emitError("nothing to report: the module has no ")
           << kStageCostsAttrName << "; run --pp-compile or pp-partition";
  std::vector<StageCostEntry> entries;
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
    StageCostEntry entry;
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
    entries.push_back(std::move(entry));
  }
  return entries;
}

LogicalResult printPartitionReport(ModuleOp module, llvm::raw_ostream &os) {
  FailureOr<std::vector<StageCostEntry>> entries = readStageCostEntries(module);
  if (failed(entries))
    return failure();
  int64_t ranks = 0;
  for (const StageCostEntry &entry : *entries)
    ranks = std::max(ranks, entry.rank + 1);
  os << "pipeline: " << entries->size() << " stages on " << ranks
     << " ranks (times in us per microbatch, memory in bytes)\n";
  os << llvm::format("%-5s %-4s %-28s %10s %10s %10s %10s %12s %12s %12s "
                     "%12s %9s %12s %12s\n",
                     "stage", "rank", "nodes", "fwd_us", "bwd_in_us",
                     "bwd_w_us", "total_us", "params", "param_bytes",
                     "optim_bytes", "act_bytes", "in_flight", "act_held",
                     "sent_bytes");
  std::vector<double> rankSeconds(ranks, 0), rankBytes(ranks, 0);
  for (auto [stage, entry] : llvm::enumerate(*entries)) {
    std::string nodes = entry.firstNode.empty()
                            ? "(none)"
                            : entry.firstNode + " .. " + entry.lastNode;
    double sent = 0;
    for (const auto &value : entry.boundary)
      sent += value.second;
    os << llvm::format("%-5zu %-4lld %-28s %10.2f %10.2f %10.2f %10.2f %12.0f "
                       "%12.0f %12.0f %12.0f %9lld %12.0f %12.0f\n",
                       stage, static_cast<long long>(entry.rank),
                       nodes.c_str(), 1e6 * entry.forwardSeconds,
                       1e6 * entry.backwardInputSeconds,
                       1e6 * entry.backwardWeightSeconds,
                       1e6 * entry.totalSeconds, entry.parameterCount,
                       entry.parameterBytes, entry.optimizerBytes,
                       entry.savedBytes, static_cast<long long>(entry.inFlight),
                       entry.savedBytes * entry.inFlight, sent);
    for (const auto &[name, bytes] : entry.boundary)
      os << llvm::format("      boundary %s: %.0f bytes\n", name.c_str(),
                         bytes);
    rankSeconds[entry.rank] += entry.totalSeconds;
    rankBytes[entry.rank] += entry.peakBytes();
  }
  os << llvm::format("%-5s %12s %16s\n", "rank", "time_us", "peak_bytes");
  for (int64_t rank = 0; rank < ranks; ++rank)
    os << llvm::format("%-5lld %12.2f %16.0f\n", static_cast<long long>(rank),
                       1e6 * rankSeconds[rank], rankBytes[rank]);
  return success();
}

} // namespace pp

//===- PipelineReport.cpp - what each stage and rank costs ----------------===//

#include "runtime/schedules/PipelineReport.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

namespace pp::runtime {
namespace {

/// printf into a string.
template <typename... Args>
std::string format(const char *pattern, Args... args) {
  int size = std::snprintf(nullptr, 0, pattern, args...);
  std::string text(static_cast<size_t>(size) + 1, '\0');
  std::snprintf(text.data(), text.size(), pattern, args...);
  text.pop_back();
  return text;
}

int64_t rankCount(const std::vector<StageEstimate> &stages) {
  int64_t ranks = 0;
  for (const StageEstimate &stage : stages)
    ranks = std::max(ranks, stage.rank + 1);
  return ranks;
}

} // namespace

StageCosts costsOf(const std::vector<StageEstimate> &stages) {
  StageCosts costs = StageCosts::uniform(static_cast<int64_t>(stages.size()),
                                         0, 0, 0, 0);
  double gradients = 0, optimizerState = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    costs.forward[s] = stages[s].forwardSeconds;
    costs.backwardInput[s] = stages[s].backwardInputSeconds;
    costs.backwardWeight[s] = stages[s].backwardWeightSeconds;
    costs.savedBytes[s] = stages[s].savedBytes;
    costs.savedForInputBytes[s] = 0;
    costs.parameterBytes.push_back(stages[s].parameterBytes);
    costs.computeCopyBytes.push_back(stages[s].computeCopyBytes);
    costs.trainableBytes.push_back(stages[s].gradientBytes);
    gradients += stages[s].gradientBytes;
    optimizerState += stages[s].optimizerBytes;
  }
  if (gradients > 0)
    costs.optimizerStatePerByte = optimizerState / gradients;
  if (!stages.empty())
    costs.dataParallel = stages.front().dataParallel;
  return costs;
}

void recordStagePeaks(const SimulatedStep &step,
                      std::vector<StageEstimate> &stages) {
  for (size_t s = 0; s < stages.size() && s < step.stageMemory.size(); ++s)
    for (const HeldBytes &held : step.stageMemory[s])
      stages[s].peakBytes = std::max(stages[s].peakBytes, held.total());
}

void printStageReport(const std::vector<StageEstimate> &stages,
                      std::ostream &os) {
  int64_t ranks = rankCount(stages);
  os << "pipeline: " << stages.size() << " stages on " << ranks
     << " ranks (times in us per microbatch, memory in bytes)\n";
  os << format("%-5s %-4s %-28s %10s %10s %10s %10s %12s %12s %12s %12s %9s "
               "%12s %12s\n",
               "stage", "rank", "nodes", "fwd_us", "bwd_in_us", "bwd_w_us",
               "total_us", "params", "param_bytes", "optim_bytes", "act_bytes",
               "in_flight", "act_held", "sent_bytes");
  std::vector<double> rankSeconds(ranks, 0), rankBytes(ranks, 0);
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageEstimate &stage = stages[s];
    std::string nodes = stage.firstNode.empty()
                            ? "(none)"
                            : stage.firstNode + " .. " + stage.lastNode;
    double sent = 0;
    for (const auto &value : stage.boundary)
      sent += value.second;
    double held = stage.savedBytes * static_cast<double>(stage.inFlight);
    os << format("%-5zu %-4lld %-28s %10.2f %10.2f %10.2f %10.2f %12.0f "
                 "%12.0f %12.0f %12.0f %9lld %12.0f %12.0f\n",
                 s, static_cast<long long>(stage.rank), nodes.c_str(),
                 1e6 * stage.forwardSeconds, 1e6 * stage.backwardInputSeconds,
                 1e6 * stage.backwardWeightSeconds, 1e6 * stage.totalSeconds,
                 stage.parameterCount, stage.parameterBytes,
                 stage.optimizerBytes, stage.savedBytes,
                 static_cast<long long>(stage.inFlight), held, sent);
    for (const auto &[name, bytes] : stage.boundary)
      os << format("      boundary %s: %.0f bytes\n", name.c_str(), bytes);
    rankSeconds[stage.rank] += stage.totalSeconds;
    rankBytes[stage.rank] +=
        stage.peakBytes > 0 ? stage.peakBytes : stage.stateBytes() + held;
  }
  os << format("%-5s %12s %16s\n", "rank", "time_us", "peak_bytes");
  for (int64_t rank = 0; rank < ranks; ++rank)
    os << format("%-5lld %12.2f %16.0f\n", static_cast<long long>(rank),
                 1e6 * rankSeconds[rank], rankBytes[rank]);
}

void printScheduleReport(const std::vector<StageEstimate> &stages,
                         const std::string &label, const SimulatedStep &ideal,
                         const SimulatedStep &predicted, std::ostream &os) {
  int64_t ranks = rankCount(stages);
  os << format("schedule %s: bubble %.1f%% ideal (equal stages), %.1f%% "
               "predicted; step %.2f us\n",
               label.c_str(), 100 * ideal.bubbleFraction,
               100 * predicted.bubbleFraction, 1e6 * predicted.stepSeconds);
  if (!stages.empty() && stages.front().dataParallel.degree > 1)
    os << format("data parallel: %lld replicas per rank, ZeRO-%d\n",
                 static_cast<long long>(stages.front().dataParallel.degree),
                 stages.front().dataParallel.zeroLevel);
  os << format("%-5s %12s %16s %14s %14s %14s %14s %16s\n", "rank", "busy_us",
               "peak_act_bytes", "param_bytes", "grad_bytes", "optim_bytes",
               "act_bytes", "peak_bytes");
  auto ofRank = [&](const auto &values, int64_t rank) {
    using Value = std::decay_t<decltype(values.front())>;
    return rank < static_cast<int64_t>(values.size()) ? values[rank] : Value();
  };
  for (int64_t rank = 0; rank < ranks; ++rank) {
    HeldBytes peak = ofRank(predicted.peakMemory, rank);
    os << format("%-5lld %12.2f %16.0f %14.0f %14.0f %14.0f %14.0f %16.0f\n",
                 static_cast<long long>(rank),
                 1e6 * ofRank(predicted.busySeconds, rank),
                 ofRank(predicted.peakActivationBytes, rank), peak.parameters,
                 peak.gradients, peak.optimizerState, peak.activations,
                 peak.total());
  }
}

} // namespace pp::runtime

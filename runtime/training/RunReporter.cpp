//===- RunReporter.cpp - what a run tells its user ------------------------===//

#include "runtime/training/RunReporter.h"

#include "runtime/training/ActivationMemory.h"
#include "runtime/training/ClockOffsets.h"
#include "runtime/training/JobExchanges.h"
#include "runtime/training/Trace.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <set>
#include <sstream>

namespace pp::runtime {

RunReporter::RunReporter(const RankContext &rank, const PipelinePlan &plan,
                         Backend &backend)
    : context(rank), plan(plan), actions(!rank.options.tracePath.empty()) {
  if (!rank.options.profilePath.empty())
    opProfile =
        std::make_unique<OpProfile>([&backend] { backend.synchronize(); });
}

void RunReporter::begin(bool usesArenas) {
  if (!reports())
    return;
  printMesh();
  printParameterKinds();
  printPipeline();
  printActivationMemory(usesArenas);
  if (!context.options.metricsPath.empty())
    metrics = std::make_unique<OutputFile>(context.options.metricsPath,
                                           OutputFile::Visibility::WhileWritten,
                                           "--metrics");
}

void RunReporter::reportStep(const StepMetrics &result) {
  if (!reports())
    return;
  context.log << "step " << result.step << "  loss " << std::setprecision(8)
              << result.loss << "  grad_norm " << result.gradNorm << "  lr "
              << std::setprecision(6) << result.learningRate << "  "
              << std::setprecision(4) << result.samplesPerSecond
              << " samples/s  " << result.tokensPerSecond << " tokens/s";
  if (result.lossScale > 0)
    context.log << "  loss_scale " << std::setprecision(17) << result.lossScale
                << (result.skipped ? "  skipped: the gradients overflowed"
                                   : "");
  context.log << std::endl;
  nlohmann::json metrics = {{"step", result.step},
                            {"loss", result.loss},
                            {"grad_norm", result.gradNorm},
                            {"lr", result.learningRate},
                            {"samples_per_s", result.samplesPerSecond},
                            {"tokens_per_s", result.tokensPerSecond}};
  if (result.lossScale > 0) {
    metrics["loss_scale"] = result.lossScale;
    metrics["skipped"] = result.skipped;
  }
  writeMetrics(metrics);
}

void RunReporter::reportEval(int64_t step, double loss, int64_t tokens,
                             int64_t batches, double seconds) {
  if (!reports())
    return;
  context.log << "eval after step " << step << "  loss " << std::setprecision(8)
              << loss << "  perplexity " << std::exp(loss) << "  (" << tokens
              << " tokens, " << batches
              << (batches == 1 ? " batch, " : " batches, ")
              << std::setprecision(3) << seconds << " s)" << std::endl;
  writeMetrics({{"eval_after_step", step},
                {"eval_loss", loss},
                {"eval_perplexity", std::exp(loss)},
                {"eval_tokens", tokens}});
}

void RunReporter::reportRankFacts(const RankFacts &facts) {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  StageMemory memory;
  int64_t rank = context.stages.rank();
  for (int64_t s : context.stages.stages())
    memory += stageMemory(context.package, s, plan.training[rank]);
  const std::vector<std::string> fields = {
      "elements_read",
      "parameter_bytes",
      "gradient_bytes",
      "optimizer_state_bytes",
      "peak_rss_bytes",
      "saved_bytes_per_microbatch",
      "estimated_saved_bytes_per_microbatch",
      "in_flight_microbatches",
      "activation_bytes",
      "measured_activation_bytes",
      "offloaded_activation_bytes",
      "measured_offloaded_activation_bytes",
      "arena_bytes",
      "heap_tensor_allocations_per_step",
      "measured_peak_bytes",
      "measured_peak_activation_bytes",
      "predicted_peak_bytes",
      "predicted_peak_activation_bytes",
      "host_device_bytes_per_step"};
  std::optional<HeldBytes> predicted = predictedPeak();
  std::vector<double> mine = {
      static_cast<double>(facts.elementsRead),
      static_cast<double>(facts.resident.parameters),
      static_cast<double>(facts.resident.gradients),
      static_cast<double>(facts.resident.optimizerState),
      static_cast<double>(usage.ru_maxrss) * 1024.0,
      static_cast<double>(memory.savedBytesPerMicrobatch),
      memory.estimatedSavedBytes.value_or(-1),
      static_cast<double>(memory.inFlightMicrobatches),
      static_cast<double>(memory.activationBytes()),
      facts.measuredActivations,
      static_cast<double>(
          mostOffloadedBytes(context.package, plan.training[rank])),
      static_cast<double>(facts.measuredOffloaded),
      static_cast<double>(facts.usesArenas ? memory.arenaBytes : 0),
      static_cast<double>(facts.heapAllocationsPerStep),
      facts.measuredPeak.total(),
      facts.measuredPeak.activations,
      predicted ? predicted->total() : -1,
      predicted ? predicted->activations : -1,
      static_cast<double>(facts.hostDeviceBytesPerStep)};
  std::vector<std::string> all = gatherTextToRank0(
      context.groups, std::string(reinterpret_cast<const char *>(mine.data()),
                                  mine.size() * sizeof(double)));
  if (!reports())
    return;
  const DeviceMesh &mesh = context.groups.mesh;
  nlohmann::json perRank = nlohmann::json::array();
  for (int64_t r = 0; r < static_cast<int64_t>(all.size()); ++r) {
    nlohmann::json entry = {{"rank", r}};
    std::vector<double> values(fields.size());
    std::memcpy(values.data(), all[r].data(),
                std::min(all[r].size(), values.size() * sizeof(double)));
    for (size_t i = 0; i < fields.size(); ++i)
      entry[fields[i]] = static_cast<int64_t>(values[i]);
    std::vector<int64_t> at = mesh.coordinates(r);
    for (size_t i = 0; i < at.size(); ++i)
      entry[mesh.axes()[i].name] = at[i];
    perRank.push_back(entry);
  }
  writeMetrics({{"ranks", perRank}});
}

void RunReporter::writeTrace() {
  const TraceRecorder &recorder = *actions.spans();
  // Ranks on other machines read other clocks: each rank's spans move onto
  // rank 0's.
  double clockAhead =
      clockAheadOfRank0(context.groups, [&] { return recorder.now(); });
  std::vector<std::string> all =
      gatherTextToRank0(context.groups, recorder.serialize(clockAhead));
  if (!reports())
    return;
  std::vector<std::vector<TraceSpan>> perRank;
  std::vector<std::string> labels;
  for (size_t r = 0; r < all.size(); ++r) {
    perRank.push_back(deserializeTraceSpans(all[r]));
    labels.push_back("rank " + std::to_string(r) + " " +
                     coordinatesOf(static_cast<int64_t>(r)));
  }
  writeOutputFile(context.options.tracePath, chromeTraceJson(perRank, labels),
                  "--trace");
  // Job rank 0's pipeline: the ranks that differ from it only in the
  // pipeline coordinate.
  std::vector<std::string> pipelineAxes;
  if (const MeshAxis *axis = context.groups.mesh.pipelineAxis())
    pipelineAxes.push_back(axis->name);
  std::vector<int64_t> pipelineRanks =
      context.groups.mesh.group(0, pipelineAxes);
  context.log << "bubble: measured " << std::fixed << std::setprecision(1)
              << 100.0 * measuredBubble(perRank, pipelineRanks)
              << "%, predicted " << 100.0 * plan.predicted.bubbleFraction
              << "% (" << plan.label << ", " << plan.layout.ranks
              << (plan.layout.ranks == 1 ? " rank, " : " ranks, ")
              << context.options.microbatches << " microbatches); trace "
              << context.options.tracePath << std::endl
              << std::defaultfloat;
}

void RunReporter::writeProfile(double stepSeconds, double reducingSeconds,
                               double reduceWaitSeconds,
                               size_t reduceBytesPerStep,
                               const ConversionCount &computeCopies,
                               const StepBreakdown &breakdown) {
  nlohmann::json ops = nlohmann::json::object();
  double opSeconds = 0;
  for (const auto &[kind, totals] : opProfile->byKind()) {
    ops[kind] = {{"calls", totals.calls}, {"seconds", totals.seconds}};
    opSeconds += totals.seconds;
  }
  std::vector<std::string> all =
      context.groups.pipeline->allGatherText(nlohmann::json{
          {"stage", context.stages.rank()},
          {"stages", context.stages.stages()},
          {"op_seconds", opSeconds},
          {"ops", ops},
          {"dp_reduce_seconds", reducingSeconds},
          {"dp_reduce_wait_seconds", reduceWaitSeconds},
          {"dp_reduce_bytes_per_step", reduceBytesPerStep},
          {"compute_copy_conversions", computeCopies.conversions},
          {"compute_copy_bytes", computeCopies.bytes},
          {"rank", context.world.rank()},
          {"breakdown", breakdown.toJson()}}.dump());
  if (!reports())
    return;
  nlohmann::json stages = nlohmann::json::array();
  for (const std::string &text : all)
    stages.push_back(nlohmann::json::parse(text));
  writeOutputFile(context.options.profilePath,
                  nlohmann::json{{"steps", context.options.steps},
                                 {"step_seconds", stepSeconds},
                                 {"stages", stages}}
                          .dump(2) +
                      "\n",
                  "--profile");
  printBreakdowns(stages);
}

/// One line per pipeline rank of the profile's `stages`: where its
/// training steps went, in percent of its step time.
void RunReporter::printBreakdowns(const nlohmann::json &stages) {
  std::ostream &log = context.log;
  log << "profile: share of each rank's step time, % (the first replica's "
         "ranks; --profile "
      << context.options.profilePath << ")" << std::endl
      << std::setw(6) << "rank" << std::setw(7) << "stage" << std::setw(10)
      << "step s";
  for (size_t p = 0; p < kStepParts; ++p)
    log << "  " << stepPartName(static_cast<StepPart>(p));
  log << std::endl << std::fixed;
  for (const nlohmann::json &stage : stages) {
    const nlohmann::json &breakdown = stage["breakdown"];
    log << std::setw(6) << stage["rank"].get<int64_t>() << std::setw(7)
        << stage["stage"].get<int64_t>() << std::setw(10)
        << std::setprecision(4) << breakdown["step_seconds"].get<double>();
    for (size_t p = 0; p < kStepParts; ++p) {
      std::string name = stepPartName(static_cast<StepPart>(p));
      log << std::setw(static_cast<int>(name.size()) + 2)
          << std::setprecision(1)
          << 100.0 * breakdown["share"][name].get<double>();
    }
    log << std::endl;
  }
  log << std::defaultfloat;
}

void RunReporter::finish(const std::string &digest) {
  if (!reports())
    return;
  context.log << "params_sha256 " << digest << std::endl;
  writeMetrics({{"params_sha256", digest}});
  if (metrics) {
    metrics->commit();
    metrics.reset();
  }
}

/// Appends `line` to the metrics file, if there is one.
void RunReporter::writeMetrics(const nlohmann::json &line) {
  if (metrics)
    metrics->write(line.dump() + "\n");
}

/// The run's first line: the mesh and every rank's coordinates on it.
void RunReporter::printMesh() {
  const DeviceMesh &mesh = context.groups.mesh;
  std::ostream &log = context.log;
  log << "mesh " << mesh.describe() << " (order ";
  for (size_t i = 0; i < mesh.axes().size(); ++i)
    log << (i ? "," : "") << mesh.axes()[i].name;
  log << "):";
  for (int64_t rank = 0; rank < mesh.deviceCount(); ++rank)
    log << " " << rank << "=" << coordinatesOf(rank);
  const std::vector<std::string> &machines = context.groups.machines;
  size_t count = std::set<std::string>(machines.begin(), machines.end()).size();
  if (count > 1) {
    std::vector<std::string> across = context.groups.axesAcrossMachines();
    log << "; " << count
        << " machines, axes across them: " << (across.empty() ? "none" : "");
    for (size_t i = 0; i < across.size(); ++i)
      log << (i ? "," : "") << across[i];
  }
  log << std::endl;
}

/// What trains: the parameters that do and those frozen, and the model's
/// floating-point tensors that the compiler held constant (at most
/// kListedConstants of their names).
void RunReporter::printParameterKinds() {
  constexpr size_t kListedConstants = 10;
  const Package &package = context.package;
  std::ostream &log = context.log;
  int64_t counts[2] = {0, 0}, elements[2] = {0, 0}, split = 0;
  for (const ParameterInfo &parameter : package.parameters) {
    if (parameter.tensor.role == Role::Constant)
      continue;
    int kind = parameter.tensor.role == Role::Frozen;
    ++counts[kind];
    elements[kind] += numElements(parameter.globalShape());
    split += parameter.sharding && parameter.sharding->parts > 1;
  }
  log << "parameters: " << counts[0] << " train (" << elements[0]
      << " elements), " << counts[1] << " frozen (" << elements[1]
      << " elements)";
  if (context.groups.tensorParallelSize > 1)
    log << "; " << split << " of " << counts[0] + counts[1]
        << " split over the tensor axis (tp "
        << context.groups.tensorParallelSize << "), the rest replicated";
  if (!package.heldConstants.empty()) {
    int64_t held = 0;
    for (const auto &constant : package.heldConstants)
      held += constant.second;
    log << "; held constant: " << package.heldConstants.size()
        << (package.heldConstants.size() == 1 ? " float tensor ("
                                              : " float tensors (")
        << held << " elements): ";
    for (size_t i = 0; i < package.heldConstants.size(); ++i) {
      if (i == kListedConstants) {
        log << " and " << package.heldConstants.size() - i
            << " more (pp-opt --pp-report lists them)";
        break;
      }
      log << (i ? ", " : "") << package.heldConstants[i].first;
    }
  }
  log << std::endl;
}

/// The pipeline: its stages and ranks, its schedule, the global batch and
/// the bubble.
void RunReporter::printPipeline() {
  const BatchLayout &layout = context.layout;
  int64_t p = context.package.numStages, m = context.options.microbatches;
  context.log << "pipeline: " << p << (p == 1 ? " stage" : " stages");
  if (p != plan.layout.ranks)
    context.log << " on " << plan.layout.ranks << " ranks";
  context.log << ", " << plan.label << ", " << m << " microbatches of "
              << context.package.microbatchSize << " samples x dp "
              << layout.dataParallel << " = global batch "
              << layout.globalBatch() << " samples per step; ideal bubble "
              << std::setprecision(3) << 100.0 * plan.ideal.bubbleFraction
              << "%, predicted " << 100.0 * plan.predicted.bubbleFraction << "%"
              << std::endl;
}

/// Each stage's activation memory: the saved bytes per microbatch times the
/// microbatches the schedule holds in flight, pp-partition's estimate of
/// the saved bytes, and the stage functions' arenas.
void RunReporter::printActivationMemory(bool usesArenas) {
  auto mib = [](double bytes) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(3) << bytes / 1048576.0 << " MiB";
    return text.str();
  };
  const Package &package = context.package;
  std::ostream &log = context.log;
  log << "activation memory:";
  for (int64_t at = 0; at < package.numStages; ++at) {
    StageMemory memory =
        stageMemory(package, at, plan.training[context.stages.rankOf(at)]);
    log << (at == 0 ? "" : ";") << " stage " << at << " "
        << memory.inFlightMicrobatches << " x "
        << mib(memory.savedBytesPerMicrobatch) << " = "
        << mib(memory.activationBytes());
    if (memory.offloadedMicrobatches > 0)
      log << " + up to " << memory.offloadedMicrobatches << " offloaded";
    log << " (estimate "
        << (memory.estimatedSavedBytes ? mib(*memory.estimatedSavedBytes)
                                       : "none")
        << "), arenas " << mib(usesArenas ? memory.arenaBytes : 0);
  }
  log << std::endl;
}

/// What this rank holds at its peak in the plan's prediction (its table
/// simulated with the package's estimated stage costs, the run's data
/// parallelism and optimizer): what --report predicts. None for a package
/// without estimates.
std::optional<HeldBytes> RunReporter::predictedPeak() const {
  if (context.package.stageEstimates.empty())
    return std::nullopt;
  return plan.predicted.peakMemory.at(context.stages.rank());
}

/// Job rank `rank`'s coordinates on the mesh: "(pp0,dp1)".
std::string RunReporter::coordinatesOf(int64_t rank) const {
  const DeviceMesh &mesh = context.groups.mesh;
  std::vector<int64_t> at = mesh.coordinates(rank);
  std::string text = "(";
  for (size_t i = 0; i < at.size(); ++i)
    text += (i ? "," : "") + mesh.axes()[i].name + std::to_string(at[i]);
  return text + ")";
}

} // namespace pp::runtime

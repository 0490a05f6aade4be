//===- ScheduleCheck.cpp - proving an action table runs -------------------===//
//
// Two passes. The first reads each rank's list alone: actions name its own
// stages, compute actions run once each and in a valid order, every message
// that crosses ranks has its Send after its producer (anywhere before the
// end of the row, the rank's Sends in the order their producers ran) and
// its Recv before its consumer, each stage's data-parallel actions frame
// its computes, the Optimizer comes last. The second plays all ranks
// together, Recvs blocking until their Sends ran where the row places
// them, and names the cycle of waiting ranks if they stop. Data-parallel
// actions take no part in it: their collectives run among the replicas of
// one pipeline rank, which run the same row and so issue them in the same
// order (docs/schedules.md).
//
//===----------------------------------------------------------------------===//

#include "runtime/schedules/ActionMessages.h"
#include "runtime/schedules/Schedule.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

namespace pp::runtime {
namespace {

using ActionKey = std::tuple<ActionKind, int64_t, int64_t>;

ActionKey keyOf(ActionKind kind, int64_t stage, int64_t microbatch) {
  return {kind, stage, microbatch};
}

/// A compute action of `stage`, microbatch `mb`, for messages.
std::string describe(ActionKind kind, int64_t stage, int64_t mb) {
  Action action;
  action.kind = kind;
  action.stage = stage;
  action.microbatch = mb;
  return describeAction(action);
}

/// "stage 1 on rank 0, stage 3 on rank 0" for `stages`.
std::string stagesOn(const std::set<int64_t> &stages,
                     const PipelineLayout &layout) {
  std::string text;
  for (int64_t stage : stages)
    text += (text.empty() ? "" : ", ") + std::string("stage ") +
            std::to_string(stage) + " on rank " +
            std::to_string(layout.stageRanks[stage]);
  return text;
}

/// Which data-parallel actions every stage's row must have, and why.
struct DataParallelDemand {
  bool reduces = false, gathers = false;
  /// Set when the run gave them (checkSchedule's `dataParallel`), so that
  /// actions it does not need are refused too.
  std::optional<DataParallelism> given;
};

/// What the table needs: what `given` says, else what the table has.
DataParallelDemand demandOf(const ScheduleTable &table, bool training,
                            const std::optional<DataParallelism> &given) {
  DataParallelDemand demand;
  demand.given = given;
  if (given) {
    demand.reduces = training && given->reducesGradients();
    demand.gathers = given->gathersParameters();
    return demand;
  }
  for (const std::vector<Action> &row : table)
    for (const Action &action : row) {
      demand.reduces |= action.kind == ActionKind::ReduceGradients;
      demand.gathers |= action.kind == ActionKind::GatherParameters ||
                        action.kind == ActionKind::ReleaseParameters;
    }
  return demand;
}

/// Where a stage's parameters are under ZeRO-3.
enum class Gathered { NotYet, Held, Released };

/// Where a microbatch's saved values are once an offload action named them.
enum class Copied { Offloaded, Reloaded };

/// The first pass over one rank's list.
class RankCheck {
public:
  RankCheck(const PipelineLayout &layout, const MessageGraph &messages,
            bool splitBackward, bool training, const DataParallelDemand &demand,
            int64_t rank)
      : layout(layout), messages(messages), splitBackward(splitBackward),
        training(training), demand(demand), rank(rank),
        lastMicrobatch(layout.stages(), {-1, -1, -1}),
        gathered(layout.stages(), Gathered::NotYet),
        reduced(layout.stages(), false) {}

  /// Which of lastMicrobatch's orders `kind` keeps, if any.
  static std::optional<size_t> orderOf(ActionKind kind) {
    switch (kind) {
    case ActionKind::Forward:
      return 0;
    case ActionKind::Eval:
      return 1;
    case ActionKind::Backward:
    case ActionKind::BackwardWeight:
      return 2;
    default:
      return std::nullopt;
    }
  }

  /// Checks the list; "" or the first violation.
  std::string run(const std::vector<Action> &actions) {
    for (size_t i = 0; i < actions.size(); ++i) {
      const Action &action = actions[i];
      std::string problem;
      if (action.kind == ActionKind::Optimizer)
        problem = optimizer(i + 1 == actions.size());
      else if (isDataParallel(action.kind))
        problem = dataParallelAction(action);
      else if (isOffload(action.kind))
        problem = offloadAction(action);
      else if (problem = placed(action); problem.empty())
        problem = isCompute(action.kind)            ? computeAction(action)
                  : action.kind == ActionKind::Send ? send(action)
                                                    : recv(action);
      if (!problem.empty())
        return problem;
    }
    if (std::string problem = unsent(); !problem.empty())
      return problem;
    if (!receivedFor.empty()) {
      auto [kind, stage, mb] = *receivedFor.begin();
      return prefix() + "lists recv " + describe(kind, stage, mb) +
             " but never runs " + describe(kind, stage, mb) +
             "; remove the recv or add its compute action";
    }
    if (training && !optimized)
      return prefix() +
             "never runs the optimizer; end every rank's list with O";
    if (std::string problem = missing(); !problem.empty())
      return problem;
    return missingDataParallel();
  }

private:
  std::string prefix() const { return "rank " + std::to_string(rank) + " "; }

  /// The first Send the compute actions so far still owe, as a violation.
  std::string unsent() const {
    if (owedSends.empty())
      return "";
    const Action &owed = owedSends.front();
    return prefix() + "runs " + describeAction(owed) +
           " without sending its messages to " +
           stagesOn(crossing(messageTargets(messages, owed.stage, owed.kind)),
                    layout) +
           "; add s" + formatAction(owed) + " right after it";
  }

  std::string optimizer(bool last) {
    if (!training)
      return prefix() +
             "lists the optimizer in an eval schedule; remove it (eval "
             "schedules run E actions, their sends and recvs only)";
    if (!last || optimized)
      return prefix() +
             "lists the optimizer before its last action; it ends the step, "
             "once, on every rank";
    optimized = true;
    return unsent();
  }

  /// Whether the action names a stage of this rank and a microbatch.
  std::string placed(const Action &action) const {
    std::string what = prefix() + "lists " + describeAction(action);
    if (action.stage < 0 || action.stage >= layout.stages())
      return what + ", but the pipeline has stages 0.." +
             std::to_string(layout.stages() - 1);
    if (layout.stageRanks[action.stage] != rank)
      return what + ", but stage " + std::to_string(action.stage) +
             " runs on rank " + std::to_string(layout.stageRanks[action.stage]);
    if (action.microbatch < 0 || action.microbatch >= layout.microbatches)
      return what + ", but a step has microbatches 0.." +
             std::to_string(layout.microbatches - 1);
    if (!isCompute(action.kind) &&
        (!messageClass(action.of) || !isCompute(action.of)))
      return what + "; sends and recvs move the messages of F, B, I or E";
    ActionKind kind = computeKindOf(action);
    if (!training && kind != ActionKind::Eval)
      return what + " in an eval schedule, which runs E actions only";
    if (training && kind == ActionKind::Eval)
      return what +
             " in a training schedule; E actions run in eval schedules only";
    if (!splitBackward && (kind == ActionKind::BackwardInput ||
                           kind == ActionKind::BackwardWeight))
      return what +
             ", but the package's backward is not split; use B, or compile "
             "with split-backward=true";
    return "";
  }

  /// The stages of `stages` on other ranks.
  std::set<int64_t> crossing(const std::set<int64_t> &stages) const {
    std::set<int64_t> result;
    for (int64_t stage : stages)
      if (layout.stageRanks[stage] != rank)
        result.insert(stage);
    return result;
  }

  bool ran(ActionKind kind, int64_t stage, int64_t mb) const {
    return done.count(keyOf(kind, stage, mb)) != 0;
  }
  /// Whether the backward (B, or I) of `stage`, `mb` ran.
  bool ranBackward(int64_t stage, int64_t mb) const {
    return ran(ActionKind::Backward, stage, mb) ||
           ran(ActionKind::BackwardInput, stage, mb);
  }

  /// Order within a stage: what must run before `action`.
  std::string orderProblem(const Action &action) const {
    int64_t s = action.stage, mb = action.microbatch;
    std::string what = prefix() + "runs " + describeAction(action);
    bool isBackward = action.kind == ActionKind::Backward ||
                      action.kind == ActionKind::BackwardInput;
    if (ran(action.kind, s, mb) || (isBackward && ranBackward(s, mb)) ||
        (action.kind == ActionKind::BackwardWeight &&
         ran(ActionKind::Backward, s, mb)))
      return what + " twice";
    if (isBackward && !ran(ActionKind::Forward, s, mb))
      return what + " before " + describe(ActionKind::Forward, s, mb) +
             "; a backward follows its forward";
    if (action.kind == ActionKind::BackwardWeight &&
        !ran(ActionKind::BackwardInput, s, mb))
      return what + " before " + describe(ActionKind::BackwardInput, s, mb) +
             "; the weight half follows the input half";
    // Forwards, evals and the actions that accumulate weight gradients run
    // in increasing microbatch order: outputs and sums come out in it.
    std::optional<size_t> order = orderOf(action.kind);
    if (order && lastMicrobatch[s][*order] > mb)
      return what + " after microbatch " +
             std::to_string(lastMicrobatch[s][*order]) +
             "; a stage runs its forwards, evals and weight gradients (B or "
             "W) in increasing microbatch order, so that gradients sum in "
             "the same order on any number of stages";
    for (int64_t source : messageSources(messages, s, action.kind)) {
      if (layout.stageRanks[source] != rank)
        continue;
      bool sourceRan = action.kind == ActionKind::Backward ||
                               action.kind == ActionKind::BackwardInput
                           ? ranBackward(source, mb)
                           : ran(action.kind, source, mb);
      if (!sourceRan)
        return what + " before stage " + std::to_string(source) +
               ", on the same rank, produced its messages (its " +
               (isBackward ? "backward" : actionKindName(action.kind)) +
               " of m" + std::to_string(mb) + ")";
    }
    return "";
  }

  std::string computeAction(const Action &action) {
    if (std::string problem = orderProblem(action); !problem.empty())
      return problem;
    if (std::string problem = offloaded(action); !problem.empty())
      return problem;
    if (std::string problem = ungathered(action); !problem.empty())
      return problem;
    int64_t s = action.stage, mb = action.microbatch;
    std::set<int64_t> sources =
        crossing(messageSources(messages, s, action.kind));
    if (!sources.empty() && !receivedFor.erase(keyOf(action.kind, s, mb)))
      return prefix() + "runs " + describeAction(action) +
             " without receiving its messages from " +
             stagesOn(sources, layout) + "; add r" + formatAction(action) +
             " before it";
    done.insert(keyOf(action.kind, s, mb));
    if (std::optional<size_t> order = orderOf(action.kind))
      lastMicrobatch[s][*order] = mb;
    if (!crossing(messageTargets(messages, s, action.kind)).empty())
      owedSends.push_back(action);
    return "";
  }

  /// What is wrong with a Send or Recv that any of them could get wrong:
  /// moving no messages across ranks, or coming twice.
  std::string messageProblem(const Action &action,
                             const std::set<ActionKey> &listed) const {
    std::string what = prefix() + "lists " + describeAction(action);
    bool sending = action.kind == ActionKind::Send;
    std::set<int64_t> peers =
        sending ? messageTargets(messages, action.stage, action.of)
                : messageSources(messages, action.stage, action.of);
    if (crossing(peers).empty())
      return what + ", but " +
             describe(action.of, action.stage, action.microbatch) +
             (sending ? " sends nothing to" : " takes no messages from") +
             " other ranks; remove it";
    if (listed.count(keyOf(action.of, action.stage, action.microbatch)))
      return what + " twice";
    return "";
  }

  /// A Send: after its compute action, the first of those that owe one.
  std::string send(const Action &action) {
    if (std::string problem = messageProblem(action, sent); !problem.empty())
      return problem;
    auto owed = std::find_if(
        owedSends.begin(), owedSends.end(), [&](const Action &compute) {
          return compute.kind == action.of && compute.stage == action.stage &&
                 compute.microbatch == action.microbatch;
        });
    std::string what = prefix() + "lists " + describeAction(action);
    if (owed == owedSends.end())
      return what + " before " +
             describe(action.of, action.stage, action.microbatch) +
             " ran; a send follows its compute action";
    if (owed != owedSends.begin())
      return what + " before the send of " +
             describeAction(owedSends.front()) +
             "; a rank sends its messages in the order its compute actions "
             "produced them, the order the transport delivers them in";
    sent.insert(keyOf(action.of, action.stage, action.microbatch));
    owedSends.erase(owed);
    return "";
  }

  std::string recv(const Action &action) {
    if (std::string problem = messageProblem(action, receivedFor);
        !problem.empty())
      return problem;
    ActionKey key = keyOf(action.of, action.stage, action.microbatch);
    if (done.count(key))
      return prefix() + "lists " + describeAction(action) + " after " +
             describe(action.of, action.stage, action.microbatch) +
             " ran; put it before";
    receivedFor.insert(key);
    return "";
  }

  /// Why the data-parallel actions the run needs leave no room for
  /// `action`, an unneeded one.
  std::string unneeded(const Action &action) const {
    std::string what = prefix() + "lists " + describeAction(action);
    if (action.kind == ActionKind::ReduceGradients && !training)
      return what + " in an eval schedule, which has no gradients; remove it";
    if (!demand.given)
      return "";
    if (action.kind == ActionKind::ReduceGradients && !demand.reduces)
      return what + ", but the run has one data-parallel replica, so there "
                    "is nothing to reduce; remove it";
    if (action.kind != ActionKind::ReduceGradients && !demand.gathers)
      return what + ", but the run does not shard parameters (that is "
                    "ZeRO-3 over several data-parallel replicas); remove it";
    return "";
  }

  /// The first microbatch of `stage` whose weight gradients (B, or W) have
  /// not been computed, or nullopt when all have.
  std::optional<int64_t> gradientsLeft(int64_t stage) const {
    for (int64_t mb = 0; mb < layout.microbatches; ++mb)
      if (!ran(ActionKind::Backward, stage, mb) &&
          !ran(ActionKind::BackwardWeight, stage, mb))
        return mb;
    return std::nullopt;
  }

  /// Whether the saved values `action`, a backward, takes are offloaded.
  std::string offloaded(const Action &action) const {
    if (!takesSavedValues(action.kind))
      return "";
    auto copy = copies.find({action.stage, action.microbatch});
    if (copy == copies.end() || copy->second != Copied::Offloaded)
      return "";
    return prefix() + "runs " + describeAction(action) +
           " while its saved values are offloaded; add " +
           formatAction({ActionKind::ReloadActivations, action.stage,
                         action.microbatch, ActionKind::Forward}) +
           " before it";
  }

  /// An OffloadActivations or ReloadActivations: offload between a
  /// microbatch's forward and its backward, once; reload after it.
  std::string offloadAction(const Action &action) {
    std::string what = prefix() + "lists " + describeAction(action);
    if (!training)
      return what + " in an eval schedule, which keeps nothing for a "
                    "backward; remove it";
    // Its stage and microbatch are checked as its forward's (`of`).
    if (std::string problem = placed(action); !problem.empty())
      return problem;
    int64_t s = action.stage, mb = action.microbatch;
    auto copy = copies.find({s, mb});
    if (action.kind == ActionKind::OffloadActivations) {
      if (copy != copies.end())
        return what + " twice; a microbatch's saved values are offloaded once";
      if (!ran(ActionKind::Forward, s, mb))
        return what + " before " + describe(ActionKind::Forward, s, mb) +
               "; offload follows the forward that saves the values";
      if (ranBackward(s, mb))
        return what + " after the backward of s" + std::to_string(s) + " m" +
               std::to_string(mb) + ", which took the values; remove it";
      copies[{s, mb}] = Copied::Offloaded;
      return "";
    }
    if (copy == copies.end())
      return what + " before " +
             formatAction(
                 {ActionKind::OffloadActivations, s, mb, ActionKind::Forward}) +
             "; reload follows its offload";
    if (copy->second == Copied::Reloaded)
      return what + " twice; a microbatch's saved values come back once";
    copy->second = Copied::Reloaded;
    return "";
  }

  /// A ReduceGradients, GatherParameters or ReleaseParameters.
  std::string dataParallelAction(const Action &action) {
    int64_t s = action.stage;
    std::string what = prefix() + "lists " + describeAction(action);
    if (s < 0 || s >= layout.stages())
      return what + ", but the pipeline has stages 0.." +
             std::to_string(layout.stages() - 1);
    if (layout.stageRanks[s] != rank)
      return what + ", but stage " + std::to_string(s) + " runs on rank " +
             std::to_string(layout.stageRanks[s]);
    if (action.microbatch != -1)
      return what + " for microbatch " + std::to_string(action.microbatch) +
             "; reduce, gather and release concern a whole stage (" +
             formatAction(action) + ")";
    if (std::string problem = unneeded(action); !problem.empty())
      return problem;
    if (action.kind == ActionKind::ReduceGradients)
      return reduce(s, what);
    return action.kind == ActionKind::GatherParameters ? gather(s, what)
                                                       : release(s, what);
  }

  /// A ReduceGradients of stage `s`, listed as `what`.
  std::string reduce(int64_t s, const std::string &what) {
    if (reduced[s])
      return what + " twice; a stage's gradients are reduced once a step";
    if (std::optional<int64_t> mb = gradientsLeft(s))
      return what + " before the backward of s" + std::to_string(s) + " m" +
             std::to_string(*mb) +
             " ran; reduce a stage's gradients after its last backward (B, "
             "or W when split)";
    reduced[s] = true;
    return "";
  }

  /// A GatherParameters of stage `s`, listed as `what`.
  std::string gather(int64_t s, const std::string &what) {
    if (gathered[s] != Gathered::NotYet)
      return what + " twice; a stage's parameters are gathered once a step, "
                    "before its first compute";
    gathered[s] = Gathered::Held;
    return "";
  }

  /// A ReleaseParameters of stage `s`, listed as `what`.
  std::string release(int64_t s, const std::string &what) {
    if (gathered[s] == Gathered::NotYet)
      return what + " before gather s" + std::to_string(s) +
             "; release follows its gather";
    if (gathered[s] == Gathered::Released)
      return what + " twice; a stage's parameters are released once a "
                    "step, after its last compute";
    gathered[s] = Gathered::Released;
    return "";
  }

  /// Whether ZeRO-3 has the parameters of `action`'s stage there.
  std::string ungathered(const Action &action) const {
    int64_t s = action.stage;
    if (!demand.gathers || gathered[s] == Gathered::Held)
      return "";
    std::string what = prefix() + "runs " + describeAction(action);
    if (gathered[s] == Gathered::NotYet)
      return what + " before gather s" + std::to_string(s) +
             "; ZeRO-3 gathers a stage's parameters before its first compute "
             "(add gather" +
             std::to_string(s) + " before it)";
    return what + " after release s" + std::to_string(s) +
           "; release a stage's parameters after its last compute of the "
           "step";
  }

  /// The data-parallel actions this rank's stages never ran.
  std::string missingDataParallel() const {
    std::string why = demand.given ? "the run needs them"
                                   : "the table has them for other stages";
    for (int64_t s : layout.stagesOf(rank)) {
      std::string stage = std::to_string(s);
      if (demand.reduces && training && !reduced[s])
        return prefix() + "never reduces the gradients of stage " + stage +
               " (" + why + "); add reduce" + stage + " after its last " +
               "backward";
      if (demand.gathers && gathered[s] == Gathered::NotYet)
        return prefix() + "never gathers the parameters of stage " + stage +
               " (" + why + "); add gather" + stage +
               " before its first compute";
      if (demand.gathers && gathered[s] == Gathered::Held)
        return prefix() + "never releases the parameters of stage " + stage +
               " (" + why + "); add release" + stage +
               " after its last compute";
    }
    return "";
  }

  /// The compute actions of this rank's stages that never ran.
  std::string missing() const {
    for (int64_t s : layout.stagesOf(rank))
      for (int64_t mb = 0; mb < layout.microbatches; ++mb) {
        std::string never = prefix() + "never runs ";
        if (!training) {
          if (!ran(ActionKind::Eval, s, mb))
            return never + describe(ActionKind::Eval, s, mb);
          continue;
        }
        if (!ran(ActionKind::Forward, s, mb))
          return never + describe(ActionKind::Forward, s, mb);
        if (!ranBackward(s, mb))
          return never + "the backward of s" + std::to_string(s) + " m" +
                 std::to_string(mb) +
                 (splitBackward ? " (B, or I then W)" : " (B)");
        if (ran(ActionKind::BackwardInput, s, mb) &&
            !ran(ActionKind::BackwardWeight, s, mb))
          return never + describe(ActionKind::BackwardWeight, s, mb);
      }
    return "";
  }

  const PipelineLayout &layout;
  const MessageGraph &messages;
  bool splitBackward, training;
  const DataParallelDemand &demand;
  int64_t rank;
  /// Per stage: the last microbatch of its forwards, evals and weight
  /// gradients (B or W).
  std::vector<std::array<int64_t, 3>> lastMicrobatch;
  std::set<ActionKey> done, sent;
  /// Recvs listed whose compute action has not run yet.
  std::set<ActionKey> receivedFor;
  /// The compute actions whose messages to other ranks wait for their
  /// Send, in the order they ran.
  std::vector<Action> owedSends;
  bool optimized = false;
  /// Per stage: its ZeRO-3 parameters, and whether its gradients were
  /// reduced.
  std::vector<Gathered> gathered;
  std::vector<bool> reduced;
  /// Per (stage, microbatch) that an offload action named: where its saved
  /// values are.
  std::map<std::pair<int64_t, int64_t>, Copied> copies;
};

/// The second pass: all ranks together, each Recv waiting for the Sends of
/// the stages on other ranks it takes messages from.
std::string deadlock(const ScheduleTable &table, const PipelineLayout &layout,
                     const MessageGraph &messages) {
  // Sends that ran: message class, stage, microbatch.
  std::set<ActionKey> sent;
  std::vector<size_t> next(layout.ranks, 0);
  // What a waiting rank waits for: the stage whose Send is missing.
  std::vector<int64_t> waitsFor(layout.ranks, -1);
  auto sendOf = [&](int64_t stage, const Action &action) {
    return keyOf(*messageClass(action.of), stage, action.microbatch);
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t rank = 0; rank < layout.ranks; ++rank) {
      waitsFor[rank] = -1;
      for (; next[rank] < table[rank].size(); ++next[rank], progress = true) {
        const Action &action = table[rank][next[rank]];
        if (action.kind == ActionKind::Send)
          sent.insert(sendOf(action.stage, action));
        if (action.kind != ActionKind::Recv)
          continue;
        for (int64_t source : messageSources(messages, action.stage, action.of))
          if (layout.stageRanks[source] != rank &&
              !sent.count(sendOf(source, action)))
            waitsFor[rank] = source;
        if (waitsFor[rank] >= 0)
          break;
      }
    }
  }
  auto waiting = std::find_if(waitsFor.begin(), waitsFor.end(),
                              [](int64_t stage) { return stage >= 0; });
  if (waiting == waitsFor.end())
    return "";
  // Follow the waits until a rank repeats: that is the cycle.
  std::vector<int64_t> chain = {waiting - waitsFor.begin()};
  while (true) {
    int64_t then = layout.stageRanks[waitsFor[chain.back()]];
    auto seen = std::find(chain.begin(), chain.end(), then);
    if (seen != chain.end()) {
      chain.erase(chain.begin(), seen);
      break;
    }
    chain.push_back(then);
    if (waitsFor[then] < 0)
      break;
  }
  std::string text = "the schedule deadlocks: ";
  for (size_t i = 0; i < chain.size(); ++i) {
    int64_t rank = chain[i];
    if (next[rank] >= table[rank].size()) {
      text += ", which ended without sending it";
      break;
    }
    int64_t stage = waitsFor[rank];
    text += (i ? ", which " : "rank " + std::to_string(rank) + " ") +
            std::string("waits at ") + describeAction(table[rank][next[rank]]) +
            " for stage " + std::to_string(stage) + " on rank " +
            std::to_string(layout.stageRanks[stage]);
  }
  return text;
}

} // namespace

std::string checkSchedule(const ScheduleTable &table,
                          const PipelineLayout &layout,
                          const MessageGraph &messages, bool splitBackward,
                          bool training,
                          const std::optional<DataParallelism> &dataParallel) {
  if (std::string problem = layoutProblem(layout); !problem.empty())
    return problem;
  if (dataParallel)
    if (std::string problem = dataParallelProblem(*dataParallel);
        !problem.empty())
      return problem;
  if (std::string problem = messageGraphProblem(messages, layout.stages());
      !problem.empty())
    return problem;
  if (static_cast<int64_t>(table.size()) != layout.ranks)
    return "the schedule lists " + std::to_string(table.size()) +
           " ranks, but the pipeline has " + std::to_string(layout.ranks);
  DataParallelDemand demand = demandOf(table, training, dataParallel);
  for (int64_t rank = 0; rank < layout.ranks; ++rank) {
    RankCheck check(layout, messages, splitBackward, training, demand, rank);
    if (std::string problem = check.run(table[rank]); !problem.empty())
      return problem;
  }
  return deadlock(table, layout, messages);
}

} // namespace pp::runtime

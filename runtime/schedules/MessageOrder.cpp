//===- MessageOrder.cpp - whether ranks take messages as they are sent ----===//

#include "runtime/schedules/MessageOrder.h"

#include "runtime/schedules/ActionMessages.h"

#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace pp::runtime {
namespace {

/// A message between two stages: its class, sending and receiving stage,
/// and microbatch.
struct StageMessage {
  ActionKind kind;
  int64_t from, to, microbatch;

  bool operator==(const StageMessage &other) const {
    return std::tie(kind, from, to, microbatch) ==
           std::tie(other.kind, other.from, other.to, other.microbatch);
  }
};

std::string describe(const StageMessage &message) {
  Action producer;
  producer.kind = message.kind;
  producer.stage = message.from;
  producer.microbatch = message.microbatch;
  return "the message of " + describeAction(producer) + " to stage " +
         std::to_string(message.to);
}

/// A stream: sending and receiving rank, class, sending and receiving
/// stage.
using Stream = std::tuple<int64_t, int64_t, ActionKind, int64_t, int64_t>;

/// The messages of each stream, in order.
using StreamMessages = std::map<Stream, std::vector<StageMessage>>;

/// The messages of each stream as its sender's Sends hand them over
/// (`sent`) and as its receiver's compute actions take them (`taken`), in
/// row order.
void collectStreams(const ScheduleTable &table, const PipelineLayout &layout,
                    const MessageGraph &messages, StreamMessages &sent,
                    StreamMessages &taken) {
  for (int64_t rank = 0; rank < static_cast<int64_t>(table.size()); ++rank)
    for (const Action &action : table[rank]) {
      ActionKind kind = computeKindOf(action);
      std::optional<ActionKind> type = messageClass(kind);
      if (!type)
        continue;
      if (action.kind == ActionKind::Send) {
        for (int64_t to : messageTargets(messages, action.stage, kind))
          if (int64_t peer = layout.stageRanks[to]; peer != rank)
            sent[{rank, peer, *type, action.stage, to}].push_back(
                {*type, action.stage, to, action.microbatch});
      } else if (isCompute(action.kind)) {
        for (int64_t from : messageSources(messages, action.stage, kind))
          if (int64_t peer = layout.stageRanks[from]; peer != rank)
            taken[{peer, rank, *type, from, action.stage}].push_back(
                {*type, from, action.stage, action.microbatch});
      }
    }
}

} // namespace

std::string messageOrderProblem(const ScheduleTable &table,
                                const PipelineLayout &layout,
                                const MessageGraph &messages) {
  StreamMessages sent, taken;
  collectStreams(table, layout, messages, sent, taken);
  for (const auto &[stream, sends] : sent) {
    const std::vector<StageMessage> &takes = taken[stream];
    for (size_t k = 0; k < sends.size() && k < takes.size(); ++k) {
      if (sends[k] == takes[k])
        continue;
      return "rank " + std::to_string(std::get<0>(stream)) + " sends " +
             describe(sends[k]) + " as message " + std::to_string(k) +
             " of its stream to rank " + std::to_string(std::get<1>(stream)) +
             ", which takes " + describe(takes[k]) + " there: a stream's "
             "messages must be taken in the order they are sent (the GPU "
             "transport pairs them in order); reorder the table's Sends or "
             "compute actions, or use --device cpu";
    }
  }
  return "";
}

} // namespace pp::runtime

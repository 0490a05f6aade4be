//===- ScheduleFile.cpp - schedules as text -------------------------------===//

#include "runtime/schedules/ScheduleFile.h"

#include "runtime/schedules/ActionMessages.h"

#include <sstream>
#include <stdexcept>

namespace pp::runtime {
namespace {

constexpr const char *kHeader = "pp-schedule 1";

/// The compute kinds by their letter in an action token.
std::optional<ActionKind> computeKind(char letter) {
  for (ActionKind kind :
       {ActionKind::Forward, ActionKind::Backward, ActionKind::BackwardInput,
        ActionKind::BackwardWeight, ActionKind::Eval})
    if (std::string(1, letter) == actionKindName(kind))
      return kind;
  return std::nullopt;
}

/// Reads the schedule text line by line.
class ScheduleParser {
public:
  ScheduleParser(const std::string &fileName) : fileName(fileName) {}

  ScheduleText parse(const std::string &text) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      ++lineNumber;
      line = line.substr(0, line.find('#'));
      std::istringstream words(line);
      std::string first;
      if (!(words >> first))
        continue;
      if (!headerSeen) {
        std::string rest;
        std::getline(words, rest);
        if (first != "pp-schedule" || trimmed(rest) != "1")
          fail("expected '" + std::string(kHeader) +
               "' first (the format and its version), not '" + trimmed(line) +
               "'");
        headerSeen = true;
      } else if (first == "rank") {
        rankLine(words);
      } else if (first == "ranks" || first == "stage-ranks" ||
                 first == "microbatches") {
        layoutLine(first, words);
      } else {
        fail("unknown line '" + trimmed(line) +
             "'; expected ranks, stage-ranks, microbatches or 'rank R: "
             "actions'");
      }
    }
    lineNumber = 0;
    if (!headerSeen)
      fail("no '" + std::string(kHeader) + "' header; is this a schedule?");
    checkLayout();
    if (static_cast<int64_t>(result.table.size()) != result.layout.ranks)
      fail("lists ranks 0.." + std::to_string(result.table.size()) + " of 0.." +
           std::to_string(result.layout.ranks - 1) +
           "; give a 'rank R:' line for every rank");
    return std::move(result);
  }

private:
  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error(
        fileName + (lineNumber ? ":" + std::to_string(lineNumber) : "") + ": " +
        what);
  }

  static std::string trimmed(const std::string &text) {
    size_t first = text.find_first_not_of(" \t\r");
    size_t last = text.find_last_not_of(" \t\r");
    return first == std::string::npos ? ""
                                      : text.substr(first, last - first + 1);
  }

  /// A decimal count (digits only, at most 9 of them), or fails naming
  /// `what` it should be.
  int64_t count(const std::string &word, const std::string &what) const {
    if (word.empty() || word.size() > 9 ||
        word.find_first_not_of("0123456789") != std::string::npos)
      fail("'" + word + "' is not " + what + " (a count, 0 to 999999999)");
    return std::stoll(word);
  }

  void layoutLine(const std::string &key, std::istringstream &words) {
    if (!result.table.empty())
      fail("'" + key +
           "' after the first 'rank' line; give ranks, "
           "stage-ranks and microbatches first");
    if (!seenKeys.insert(key).second)
      fail("'" + key + "' is given twice");
    std::vector<int64_t> values;
    for (std::string word; words >> word;)
      values.push_back(count(word, key == "stage-ranks" ? "a rank" : key));
    if (key != "stage-ranks" && values.size() != 1)
      fail("'" + key + "' takes one count, not " +
           std::to_string(values.size()));
    if (key == "ranks")
      result.layout.ranks = values[0];
    else if (key == "microbatches")
      result.layout.microbatches = values[0];
    else
      result.layout.stageRanks = values;
  }

  /// The layout lines are all there and describe a pipeline.
  void checkLayout() const {
    for (const char *key : {"ranks", "stage-ranks", "microbatches"})
      if (!seenKeys.count(key))
        fail(std::string("no '") + key + "' line before the ranks' actions");
    if (std::string problem = layoutProblem(result.layout); !problem.empty())
      fail(problem);
  }

  void rankLine(std::istringstream &words) {
    if (result.table.empty())
      checkLayout();
    std::string label;
    words >> label;
    int64_t expected = static_cast<int64_t>(result.table.size());
    if (label.empty() || label.back() != ':')
      fail("expected 'rank " + std::to_string(expected) +
           ":' before the actions");
    label.pop_back();
    int64_t rank = count(label, "a rank");
    if (rank != expected)
      fail("'rank " + label + ":' where 'rank " + std::to_string(expected) +
           ":' comes; list ranks 0.." +
           std::to_string(result.layout.ranks - 1) + " in order, once each");
    if (rank >= result.layout.ranks)
      fail("'rank " + label + ":', but the pipeline has ranks 0.." +
           std::to_string(result.layout.ranks - 1));
    std::vector<Action> &actions = result.table.emplace_back();
    for (std::string word; words >> word;)
      actions.push_back(action(word));
  }

  /// A data-parallel action token ("reduce2", "gather2", "release2"), or
  /// nullopt when `word` does not start with one's name.
  std::optional<Action> dataParallelAction(const std::string &word) const {
    for (ActionKind kind :
         {ActionKind::ReduceGradients, ActionKind::GatherParameters,
          ActionKind::ReleaseParameters}) {
      std::string name = actionKindName(kind);
      if (word.compare(0, name.size(), name) != 0)
        continue;
      Action action;
      action.kind = kind;
      action.stage = count(word.substr(name.size()),
                           "a stage in '" + word + "' (write " + name +
                               "2 for stage 2)");
      return action;
    }
    return std::nullopt;
  }

  /// One action token: "F2.0", "sF2.0", "rB1.3", "O", "reduce2",
  /// "gather2", "release2", "offload2.0" or "reload2.0".
  Action action(const std::string &word) const {
    Action action;
    if (word == "O") {
      action.kind = ActionKind::Optimizer;
      return action;
    }
    if (std::optional<Action> stageLevel = dataParallelAction(word))
      return *stageLevel;
    if (std::optional<Action> copy = offloadAction(word))
      return *copy;
    size_t at = 0;
    if (word[0] == 's' || word[0] == 'r')
      action.kind = word[at++] == 's' ? ActionKind::Send : ActionKind::Recv;
    std::optional<ActionKind> kind =
        at < word.size() ? computeKind(word[at]) : std::nullopt;
    auto badAction = [&] {
      fail("'" + word +
           "' is not an action; write F, B, I, W or E, then "
           "stage.microbatch (F2.0), with s or r before it for a send or "
           "recv of its messages (sF2.0), O for the optimizer, reduce, "
           "gather or release and a stage (reduce2), or offload or reload "
           "and stage.microbatch (offload2.0)");
    };
    if (!kind)
      badAction();
    (at == 0 ? action.kind : action.of) = *kind;
    if (!stageAndMicrobatch(word, at + 1, action))
      badAction();
    return action;
  }

  /// Reads "2.0" at `at` of `word` into `action`'s stage and microbatch;
  /// false when `word` has no such pair there.
  bool stageAndMicrobatch(const std::string &word, size_t at,
                          Action &action) const {
    size_t dot = word.find('.', at);
    if (dot == std::string::npos || dot == at || dot + 1 == word.size())
      return false;
    action.stage =
        count(word.substr(at, dot - at), "a stage in '" + word + "'");
    action.microbatch =
        count(word.substr(dot + 1), "a microbatch in '" + word + "'");
    return true;
  }

  /// An offload action token ("offload2.0", "reload2.0"), or nullopt when
  /// `word` does not start with one's name.
  std::optional<Action> offloadAction(const std::string &word) const {
    for (ActionKind kind :
         {ActionKind::OffloadActivations, ActionKind::ReloadActivations}) {
      std::string name = actionKindName(kind);
      if (word.compare(0, name.size(), name) != 0)
        continue;
      Action action;
      action.kind = kind;
      if (!stageAndMicrobatch(word, name.size(), action))
        fail("'" + word + "' is not an action; write " + name +
             " and stage.microbatch (" + name + "2.0)");
      return action;
    }
    return std::nullopt;
  }

  std::string fileName;
  int64_t lineNumber = 0;
  bool headerSeen = false;
  std::set<std::string> seenKeys;
  ScheduleText result;
};

} // namespace

std::string formatScheduleFile(const ScheduleTable &table,
                               const PipelineLayout &layout) {
  std::ostringstream text;
  text << "# A pipeline schedule (docs/schedules.md): each rank's actions in "
          "order.\n"
       << kHeader << "\nranks " << layout.ranks << "\nstage-ranks";
  for (int64_t rank : layout.stageRanks)
    text << " " << rank;
  text << "\nmicrobatches " << layout.microbatches << "\n";
  for (size_t rank = 0; rank < table.size(); ++rank)
    text << "rank " << rank << ":"
         << (table[rank].empty() ? "" : " " + formatActions(table[rank]))
         << "\n";
  return text.str();
}

ScheduleText parseScheduleFile(const std::string &text,
                               const std::string &fileName) {
  return ScheduleParser(fileName).parse(text);
}

} // namespace pp::runtime

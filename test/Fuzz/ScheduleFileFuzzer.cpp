//===- ScheduleFileFuzzer.cpp - fuzzes the schedule file reader -----------===//
//
// Parses each input as a schedule file (runtime/schedules/ScheduleFile.h),
// as pp-run --schedule-file does. What parses must print back to a file
// that parses to the same layout and table; then the table goes through
// what pp-run does with it before any rank starts: checkSchedule, for a
// chain of stages with whole and with split backwards, for training and
// for eval, and the simulation of a table that passes.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "runtime/schedules/ScheduleFile.h"
#include "runtime/schedules/ScheduleSimulation.h"

#include <stdexcept>

using namespace pp::runtime;

namespace {

/// The most (stage, microbatch) pairs the target checks a table for.
/// pp-run only checks a file written for the run's own stages and
/// microbatches (--microbatches), which a file cannot make larger.
constexpr int64_t kMaxComputeActions = 1 << 12;

bool sameLayout(const PipelineLayout &a, const PipelineLayout &b) {
  return a.ranks == b.ranks && a.stageRanks == b.stageRanks &&
         a.microbatches == b.microbatches;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ScheduleText parsed;
  try {
    parsed = parseScheduleFile(
        std::string(reinterpret_cast<const char *>(data), size), "fuzz.txt");
  } catch (const std::runtime_error &) {
    return 0;
  }
  const PipelineLayout &layout = parsed.layout;
  std::string printed = formatScheduleFile(parsed.table, layout);
  try {
    ScheduleText reparsed = parseScheduleFile(printed, "printed.txt");
    if (!sameLayout(reparsed.layout, layout) || reparsed.table != parsed.table)
      pp::fuzz::fail("a schedule file does not print back to the same "
                     "table:\n" +
                     printed);
  } catch (const std::runtime_error &error) {
    pp::fuzz::fail(std::string("a printed schedule does not parse: ") +
                   error.what() + "\n" + printed);
  }
  if (layout.stages() * layout.microbatches > kMaxComputeActions)
    return 0;
  MessageGraph messages = chainMessages(layout.stages());
  for (bool splitBackward : {false, true})
    for (bool training : {true, false})
      if (checkSchedule(parsed.table, layout, messages, splitBackward,
                        training)
              .empty())
        simulateEqualStages(parsed.table, layout, messages);
  return 0;
}

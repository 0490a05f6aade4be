//===- MessageStreamsTest.cpp - a package's messages between ranks --------===//

#include "runtime/training/PipelinePlan.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

using namespace pp::runtime;

namespace {

/// A function of `phase` with `messages` (send, peer, tensor names).
StageFunctionInfo function(
    Phase phase,
    const std::vector<std::tuple<bool, int64_t, std::vector<std::string>>>
        &messages) {
  StageFunctionInfo info;
  info.phase = phase;
  for (const auto &[send, peer, names] : messages) {
    MessageInfo message;
    message.send = send;
    message.peer = peer;
    for (const std::string &name : names) {
      TensorInfo tensor;
      tensor.name = name;
      message.tensors.push_back(tensor);
    }
    info.messages.push_back(message);
  }
  return info;
}

TEST(MessageStreams, OnePerClassAndStagePairAcrossRanks) {
  // Stages 0 and 2 on rank 0, stage 1 on rank 1; stage 0's forward also
  // sends to stage 2 on its own rank, and its eval sends what its forward
  // does.
  Package package;
  package.numStages = 3;
  package.stageRanks = {0, 1, 0};
  package.stages.resize(3);
  package.stages[0].functions = {
      function(Phase::Forward, {{true, 1, {"a0", "b0"}}, {true, 2, {"s0"}}}),
      function(Phase::Eval, {{true, 1, {"a0", "b0"}}}),
      function(Phase::Backward, {{false, 1, {"g1"}}})};
  package.stages[1].functions = {
      function(Phase::Forward, {{false, 0, {"a0", "b0"}}, {true, 2, {"a1"}}}),
      function(Phase::BackwardInput,
               {{false, 2, {"g2"}}, {true, 0, {"g1"}}}),
      function(Phase::BackwardWeight, {})};
  package.stages[2].functions = {
      function(Phase::Forward, {{false, 1, {"a1"}}, {false, 0, {"s0"}}}),
      function(Phase::Backward, {{true, 1, {"g2"}}})};

  std::vector<MessageStream> streams = crossRankStreams(package);
  ASSERT_EQ(streams.size(), 4u);
  auto expectStream = [&](size_t i, int64_t from, int64_t to,
                          std::vector<std::string> names) {
    EXPECT_EQ(streams[i].fromRank, from) << "stream " << i;
    EXPECT_EQ(streams[i].toRank, to) << "stream " << i;
    EXPECT_EQ(streams[i].names, names) << "stream " << i;
  };
  // Forwards (with the evals) from stage 0 to 1 and 1 to 2, then
  // backwards from stage 1 to 0 and 2 to 1.
  expectStream(0, 0, 1, {"a0", "b0"});
  expectStream(1, 1, 0, {"a1"});
  expectStream(2, 1, 0, {"g1"});
  expectStream(3, 0, 1, {"g2"});
}

} // namespace

//===- StageRouterTest.cpp - messages held until the table's sends --------===//

#include "runtime/training/StageRouter.h"
#include "ErrorOf.h"
#include "runtime/device/Device.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

using namespace pp::runtime;

namespace {

/// A transport that records each message handed to it: (rank, name, its
/// one float).
class RecordingTransport : public MessageChannel {
public:
  void send(int64_t rank, const std::string &name,
            const pp_tensor &tensor) override {
    sent.emplace_back(rank, name, valueOf(tensor));
  }
  std::string recv(int64_t, const std::string &, pp_tensor &) override {
    return "the test receives nothing from other ranks";
  }

  static float valueOf(const pp_tensor &tensor) {
    return *static_cast<float *>(
        pp_tensor_data(const_cast<pp_tensor *>(&tensor)));
  }

  std::vector<std::tuple<int64_t, std::string, float>> sent;
};

/// A one-float host tensor holding `value`.
TensorPtr scalar(float value) {
  int64_t shape[] = {1};
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, 1, shape, &tensor), PP_OK);
  *static_cast<float *>(pp_tensor_data(tensor)) = value;
  return TensorPtr(tensor);
}

Action action(ActionKind kind, int64_t stage, int64_t microbatch,
              ActionKind of = ActionKind::Forward) {
  Action result;
  result.kind = kind;
  result.stage = stage;
  result.microbatch = microbatch;
  result.of = of;
  return result;
}

Action forward(int64_t stage, int64_t microbatch) {
  return action(ActionKind::Forward, stage, microbatch);
}

Action sendOfForward(int64_t stage, int64_t microbatch) {
  return action(ActionKind::Send, stage, microbatch);
}

/// Rank 0 of stages 0 and 1 on rank 0, stage 2 on rank 1, with a frame on
/// the host's queue over `transport`.
struct Rank0 {
  explicit Rank0(RecordingTransport &transport) {
    frame.channel = &transport;
    frame.queue = &hostDevice().defaultQueue();
  }
  StageRouter router{{0, 0, 1}, 0};
  pp_frame frame;
};

TEST(StageRouter, HoldsMessagesToOtherRanksUntilTheirSend) {
  RecordingTransport transport;
  Rank0 rank(transport);
  TensorPtr x = scalar(1), y = scalar(2);
  rank.router.prepare(rank.frame, 0, forward(1, 0));
  rank.router.send(2, "x", *x);
  rank.router.send(2, "y", *y);
  rank.router.prepare(rank.frame, 0, forward(1, 1));
  rank.router.send(2, "x", *scalar(3));
  // The stage function may reuse or free what it sent: the router holds
  // copies.
  *static_cast<float *>(pp_tensor_data(x.get())) = 9;
  EXPECT_TRUE(transport.sent.empty());
  EXPECT_EQ(rank.router.unsent(),
            "rank 0 ended its step still holding the messages of F s1 m0 "
            "(stage 1, microbatch 0) for rank 1: its row has no sF1.0 after "
            "that action");
  // Each Send hands over its compute's messages, in the order produced.
  rank.router.sendHeld(sendOfForward(1, 0), transport);
  using Sent = std::tuple<int64_t, std::string, float>;
  EXPECT_EQ(transport.sent, (std::vector<Sent>{{1, "x", 1}, {1, "y", 2}}));
  rank.router.sendHeld(sendOfForward(1, 1), transport);
  EXPECT_EQ(transport.sent.back(), (Sent{1, "x", 3}));
  EXPECT_EQ(rank.router.unsent(), "");
  // A Send whose compute sent nothing (or ran later) is a schedule error.
  EXPECT_EQ(
      errorOf([&] { rank.router.sendHeld(sendOfForward(1, 1), transport); }),
      "rank 0 at sF1.1: stage 1 has produced no messages for other "
      "ranks in microbatch 1 yet; a send follows its compute action");
}

TEST(StageRouter, SendsAtOnceWhenTheRowPlacesTheSendRightAfter) {
  RecordingTransport transport;
  Rank0 rank(transport);
  rank.router.sendAtOnce(true);
  rank.router.prepare(rank.frame, 0, forward(1, 0));
  rank.router.send(2, "x", *scalar(1));
  // Handed over as produced: nothing is held, and the Send has no more to
  // do.
  using Sent = std::tuple<int64_t, std::string, float>;
  EXPECT_EQ(transport.sent, (std::vector<Sent>{{1, "x", 1}}));
  EXPECT_EQ(rank.router.unsent(), "");
  rank.router.sendHeld(sendOfForward(1, 0), transport);
  EXPECT_EQ(transport.sent.size(), 1u);
  // A Send placed later again holds its compute's messages until it runs.
  rank.router.sendAtOnce(false);
  rank.router.prepare(rank.frame, 0, forward(1, 1));
  rank.router.send(2, "x", *scalar(2));
  EXPECT_EQ(transport.sent.size(), 1u);
  rank.router.sendHeld(sendOfForward(1, 1), transport);
  EXPECT_EQ(transport.sent.back(), (Sent{1, "x", 2}));
}

TEST(StageRouter, HandsMessagesBetweenItsStagesOverInMemory) {
  RecordingTransport transport;
  Rank0 rank(transport);
  rank.router.prepare(rank.frame, 0, forward(0, 0));
  rank.router.send(1, "h", *scalar(5));
  EXPECT_TRUE(transport.sent.empty());
  EXPECT_EQ(rank.router.unsent(), "");
  rank.router.prepare(rank.frame, 0, forward(1, 0));
  EXPECT_EQ(rank.router.await(0, "h"), "");
  TensorPtr received = scalar(0);
  EXPECT_EQ(rank.router.recv(0, "h", *received), "");
  EXPECT_EQ(RecordingTransport::valueOf(*received), 5);
  EXPECT_EQ(rank.router.await(0, "h"),
            "stage 0 has not produced 'h' for microbatch 0 yet: the schedule "
            "runs its consumer first");
}

} // namespace

//===- LinkFramesTest.cpp - sealed messages on a link ---------------------===//

#include "runtime/communication/LinkFrames.h"
#include "runtime/communication/Socket.h"

#include "ThreadRanks.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <string>

using namespace pp::runtime;
using pp::runtime::test::RankOptions;
using pp::runtime::test::runRanks;

namespace {

/// Two connected sockets: a link's two ends.
struct SocketPair {
  int ends[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0); }
  ~SocketPair() {
    ::close(ends[0]);
    ::close(ends[1]);
  }
  /// The bytes waiting at the receiving end.
  std::string drain() {
    std::string bytes(1 << 16, '\0');
    ssize_t got = ::recv(ends[1], bytes.data(), bytes.size(), MSG_DONTWAIT);
    bytes.resize(got > 0 ? static_cast<size_t>(got) : 0);
    return bytes;
  }
  /// Puts `bytes` back to be read at the receiving end.
  void inject(const std::string &bytes) {
    ASSERT_TRUE(writeAll(ends[0], bytes.data(), bytes.size()));
  }
};

const std::string kLinkKey(32, '\x5a');

/// What one 64-byte message on (3, 9) looks like on the wire, sealed.
std::string sealedFrame(MessageSeal &seal) {
  SocketPair link;
  std::string message(64, 'm');
  EXPECT_TRUE(
      writeFrame(link.ends[0], &seal, 3, 9, message.data(), message.size()));
  return link.drain();
}

FrameRead readInjected(const std::string &wire, MessageSeal *seal) {
  SocketPair link;
  link.inject(wire);
  ::shutdown(link.ends[0], SHUT_WR);
  FrameHeader header;
  MessageBytes bytes;
  return readFrame(link.ends[1], seal, header, bytes);
}

TEST(LinkFrames, ASealedMessageArrivesWhole) {
  MessageSeal sender(kLinkKey, true, 1, 0), receiver(kLinkKey, false, 1, 0);
  SocketPair link;
  std::vector<float> values(1000);
  std::iota(values.begin(), values.end(), 0.5f);
  for (int message = 0; message < 3; ++message) {
    ASSERT_TRUE(writeFrame(link.ends[0], &sender, 7, message, values.data(),
                           values.size() * sizeof(float)));
    FrameHeader header;
    MessageBytes bytes;
    ASSERT_EQ(readFrame(link.ends[1], &receiver, header, bytes),
              FrameRead::Received);
    EXPECT_EQ(header.channel, 7u);
    EXPECT_EQ(header.slot, static_cast<uint64_t>(message));
    ASSERT_EQ(bytes.size(), values.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(bytes.data(), values.data(), bytes.size()), 0);
  }
}

TEST(LinkFrames, AnAlteredByteIsCaught) {
  MessageSeal sender(kLinkKey, true, 1, 0);
  std::string wire = sealedFrame(sender);
  // A byte of the message's bytes, of its slot and of its size.
  for (size_t at : {wire.size() - 20, size_t(8), size_t(16)}) {
    std::string altered = wire;
    altered[at] ^= 1;
    MessageSeal receiver(kLinkKey, false, 1, 0);
    EXPECT_EQ(readInjected(altered, &receiver), FrameRead::Altered)
        << "byte " << at;
  }
}

TEST(LinkFrames, AnAlteredSizeIsCaughtBeforeAnythingIsAllocated) {
  MessageSeal sender(kLinkKey, true, 1, 0), receiver(kLinkKey, false, 1, 0);
  std::string wire = sealedFrame(sender);
  uint64_t huge = uint64_t(1) << 62;
  std::memcpy(wire.data() + 16, &huge, sizeof(huge));
  EXPECT_EQ(readInjected(wire, &receiver), FrameRead::Altered);
}

TEST(LinkFrames, AReplayedOrForgedMessageIsCaught) {
  MessageSeal sender(kLinkKey, true, 1, 0);
  std::string wire = sealedFrame(sender);
  MessageSeal receiver(kLinkKey, false, 1, 0);
  SocketPair link;
  link.inject(wire + wire);
  FrameHeader header;
  MessageBytes bytes;
  EXPECT_EQ(readFrame(link.ends[1], &receiver, header, bytes),
            FrameRead::Received);
  EXPECT_EQ(readFrame(link.ends[1], &receiver, header, bytes),
            FrameRead::Altered);
  // Under another key (a host without the secret), and in the sender's own
  // direction (a message reflected back to it).
  MessageSeal stranger(std::string(32, '\x11'), false, 1, 0),
      reflected(kLinkKey, true, 1, 0);
  EXPECT_EQ(readInjected(wire, &stranger), FrameRead::Altered);
  EXPECT_EQ(readInjected(wire, &reflected), FrameRead::Altered);
}

TEST(LinkFrames, AFrameFromAnotherRankThanClaimedIsCaught) {
  // Rank 2's link to rank 0, its claim altered on the way to rank 1's.
  MessageSeal sender(kLinkKey, true, 2, 0), receiver(kLinkKey, false, 1, 0);
  EXPECT_EQ(readInjected(sealedFrame(sender), &receiver), FrameRead::Altered);
}

TEST(LinkFrames, AnUnsealedLinkChecksNothing) {
  MessageSeal sender(kLinkKey, true, 1, 0);
  std::string wire = sealedFrame(sender);
  wire[wire.size() - 20] ^= 1;
  EXPECT_EQ(readInjected(wire, nullptr), FrameRead::Received);
}

TEST(LinkFrames, SealedLinksCarryTheCollectivesBitForBit) {
  RankOptions options;
  options.integrity = LinkIntegrity::Always;
  runRanks(
      3,
      [](Communicator &world) {
        std::vector<float> values(300000, 0.25f * (world.rank() + 1));
        world.allReduceSum(values.data(), values.size());
        for (float value : {values.front(), values.back()})
          EXPECT_EQ(value, 0.25f + 0.5f + 0.75f);
      },
      options);
}

} // namespace

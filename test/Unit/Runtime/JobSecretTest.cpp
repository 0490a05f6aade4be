//===- JobSecretTest.cpp - who may use a job's rendezvous store -----------===//
//
// The store rank 0 serves listens on the address MASTER_ADDR names only and
// lets in only clients that prove the job's secret; strangers are refused
// and logged, and a rank with the wrong secret gets a clear error.
//
//===----------------------------------------------------------------------===//

#include "runtime/communication/Communicator.h"
#include "runtime/communication/JobSecret.h"
#include "runtime/communication/TcpStore.h"

#include "FreePort.h"
#include "RawSockets.h"

#include <gtest/gtest.h>

#include <thread>

using namespace pp::runtime;
using namespace pp::runtime::test;

namespace {

constexpr std::chrono::seconds kTimeout(5);

TEST(JobSecret, GeneratedSecretsAre32FreshRandomBytesInHex) {
  std::string first = generateJobSecret(), second = generateJobSecret();
  EXPECT_EQ(first.size(), 64u);
  EXPECT_EQ(first.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(first, second);
}

TEST(JobSecret, ALocalJobsStoreListensOnLoopbackOnly) {
  int port = freePort();
  TcpStore store("127.0.0.1", port, /*serve=*/true, "secret", kTimeout);
  EXPECT_EQ(listeningAddresses(port), std::set<std::string>{"0100007F"});
}

TEST(JobSecret, AStrangerIsRefusedAndLogged) {
  int port = freePort();
  TcpStore store("127.0.0.1", port, /*serve=*/true, "secret", kTimeout);
  // A stranger answers the challenge with a store request instead of a
  // proof: 'S', then a key and a value that would redirect a rank.
  int stranger = connectRaw(port);
  std::string request = "S";
  for (const std::string blob : {"0", "attacker's address"}) {
    uint64_t size = blob.size();
    request.append(reinterpret_cast<const char *>(&size), sizeof(size));
    request += blob;
  }
  request.resize(64, '\0'); // As long as a proof.
  testing::internal::CaptureStderr();
  ASSERT_EQ(::send(stranger, request.data(), request.size(), 0),
            static_cast<ssize_t>(request.size()));
  std::string answer = readToEnd(stranger);
  std::string log = testing::internal::GetCapturedStderr();
  // The challenge (32 bytes), then the refusal and the end of the line.
  EXPECT_EQ(answer.substr(32), "R");
  EXPECT_EQ(log, "pp: the rendezvous store refused a connection from "
                 "127.0.0.1:" +
                     std::to_string(localPort(stranger)) +
                     ": its proof of the job secret is wrong (its "
                     "PP_JOB_SECRET differs from this rank's)\n");
  ::close(stranger);
  // The key was never written: a rank of the job does not find it.
  TcpStore rank("127.0.0.1", port, /*serve=*/false, "secret",
                std::chrono::milliseconds(500));
  EXPECT_THROW(rank.get("0"), std::runtime_error);
}

TEST(JobSecret, ARankWithAnotherSecretGetsAClearError) {
  int port = freePort();
  TcpStore store("127.0.0.1", port, /*serve=*/true, "secret", kTimeout);
  testing::internal::CaptureStderr();
  try {
    TcpStore("127.0.0.1", port, /*serve=*/false, "another secret", kTimeout);
    ADD_FAILURE() << "a client with the wrong secret got in";
  } catch (const std::runtime_error &error) {
    EXPECT_EQ(error.what(),
              "the rendezvous store at 127.0.0.1:" + std::to_string(port) +
                  ": it refused this rank's PP_JOB_SECRET; set the same "
                  "PP_JOB_SECRET on every rank");
  }
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("pp: the rendezvous store refused a connection from "
                     "127.0.0.1:"),
            std::string::npos)
      << log;
}

TEST(JobSecret, ARankChecksThatTheStoreKnowsTheSecret) {
  // Something else listens at MASTER_ADDR:MASTER_PORT and accepts anyone.
  int port = freePort();
  int impostor = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = loopback(port);
  ASSERT_EQ(::bind(impostor, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address)),
            0);
  ASSERT_EQ(::listen(impostor, 1), 0);
  std::thread serve([&] {
    int fd = ::accept(impostor, nullptr, nullptr);
    std::string challenge(32, 'n'), proof(64, '\0');
    ::send(fd, challenge.data(), challenge.size(), 0);
    ::recv(fd, proof.data(), proof.size(), MSG_WAITALL);
    std::string accepted = "A" + std::string(32, 'p');
    ::send(fd, accepted.data(), accepted.size(), 0);
    ::close(fd);
  });
  try {
    TcpStore("127.0.0.1", port, /*serve=*/false, "secret", kTimeout);
    ADD_FAILURE() << "a rank trusted a store without the secret";
  } catch (const std::runtime_error &error) {
    EXPECT_EQ(error.what(),
              "the rendezvous store at 127.0.0.1:" + std::to_string(port) +
                  ": it does not know the job's secret (another program "
                  "listens there?)");
  }
  serve.join();
  ::close(impostor);
}

TEST(JobSecret, AJobOfSeveralRanksNeedsASecret) {
  RendezvousInfo info;
  info.worldSize = 2;
  info.masterPort = freePort();
  try {
    Communicator world(info);
    FAIL() << "a 2-rank job started without a secret";
  } catch (const std::runtime_error &error) {
    EXPECT_STREQ(error.what(),
                 "a job of 2 ranks needs a job secret: set PP_JOB_SECRET to "
                 "the same random value on every rank; pp-run's launcher "
                 "does this for you");
  }
}

} // namespace

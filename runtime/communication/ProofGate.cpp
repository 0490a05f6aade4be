//===- ProofGate.cpp - connections proving the job secret at once ---------===//

#include "runtime/communication/ProofGate.h"
#include "runtime/communication/Socket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>
#include <utility>

namespace pp::runtime {
namespace {

/// Sends all of `bytes` on the non-blocking `fd` at once; false when the
/// socket did not take them (a fresh connection's buffer always does).
bool sendAtOnce(int fd, const void *bytes, size_t size) {
  ssize_t sent;
  do
    sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(size);
}

/// "10 s", "250 ms".
std::string describe(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0)
    return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

} // namespace

ProofGate::ProofGate(std::string secret, std::string listener,
                     std::chrono::milliseconds deadline, size_t maxPending)
    : secret(std::move(secret)), listener(std::move(listener)),
      deadline(deadline), maxPending(std::max<size_t>(maxPending, 1)) {}

ProofGate::~ProofGate() {
  for (Pending &connection : pending)
    refuse(connection, "it had not proved the job secret when " + listener +
                           " stopped listening");
  for (const ProvenConnection &connection : proven)
    ::close(connection.fd);
}

void ProofGate::refuse(Pending &connection, const std::string &reason) {
  logRefusal(listener, connection.address, reason);
  ::close(connection.fd);
  connection.fd = -1;
}

void ProofGate::acceptFrom(int listeningFd) {
  size_t room = pending.size() < maxPending ? maxPending - pending.size() : 1;
  for (size_t accepted = 0; accepted < room;) {
    int fd = acceptWaiting(listeningFd);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      // Out of descriptors or memory: let the deadlines free some before
      // the listener, still readable, is tried again.
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return;
    }
    ++accepted;
    std::string address = peerAddress(fd);
    std::optional<Pending> connection;
    try {
      connection.emplace(); // Draws the challenge.
    } catch (const std::exception &error) {
      logRefusal(listener, address, error.what());
      ::close(fd);
      continue;
    }
    connection->fd = fd;
    connection->address = std::move(address);
    connection->deadline = Clock::now() + deadline;
    if (!sendAtOnce(fd, connection->challenge.challenge(),
                    ProofChallenge::kChallengeBytes)) {
      refuse(*connection, "it closed the connection before its challenge");
      continue;
    }
    if (pending.size() == maxPending) {
      refuse(pending.front(),
             "it was the oldest of more than " + std::to_string(maxPending) +
                 " connections still proving the job secret (a flood of "
                 "connections?)");
      pending.pop_front();
    }
    pending.push_back(std::move(*connection));
  }
}

void ProofGate::addPollEntries(std::vector<pollfd> &fds) const {
  for (const Pending &connection : pending)
    fds.push_back({connection.fd, POLLIN, 0});
}

std::vector<ProvenConnection> ProofGate::advance(const pollfd *entries,
                                                 size_t count) {
  std::vector<ProvenConnection> admitted;
  for (size_t i = 0; i < count && i < pending.size(); ++i) {
    Pending &connection = pending[i];
    if (!entries[i].revents)
      continue;
    ssize_t got;
    do
      got = ::recv(connection.fd, connection.response + connection.received,
                   sizeof(connection.response) - connection.received, 0);
    while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      continue;
    if (got <= 0) {
      refuse(connection,
             "it sent no proof of the job secret (not a rank of this job?)");
      continue;
    }
    connection.received += got;
    if (connection.received < sizeof(connection.response))
      continue;
    std::string refusal;
    std::string answer =
        connection.challenge.answer(secret, connection.response, refusal);
    if (!refusal.empty()) {
      // Logged before the peer hears of it.
      logRefusal(listener, connection.address, refusal);
      sendAtOnce(connection.fd, answer.data(), answer.size());
      ::close(connection.fd);
      connection.fd = -1;
      continue;
    }
    if (!sendAtOnce(connection.fd, answer.data(), answer.size())) {
      refuse(connection, "it left during the proof of the job secret");
      continue;
    }
    admitted.push_back(
        {std::exchange(connection.fd, -1),
         connection.challenge.linkKey(secret, connection.response)});
  }
  Clock::time_point now = Clock::now();
  for (Pending &connection : pending)
    if (connection.fd >= 0 && now >= connection.deadline)
      refuse(connection,
             "it sent no proof of the job secret within " +
                 describe(deadline) + " (not a rank of this job?)");
  pending.erase(std::remove_if(pending.begin(), pending.end(),
                               [](const Pending &connection) {
                                 return connection.fd < 0;
                               }),
                pending.end());
  return admitted;
}

int ProofGate::msUntilDeadline() const {
  if (pending.empty())
    return -1;
  auto earliest = std::min_element(
      pending.begin(), pending.end(), [](const Pending &a, const Pending &b) {
        return a.deadline < b.deadline;
      });
  auto left = std::chrono::ceil<std::chrono::milliseconds>(earliest->deadline -
                                                           Clock::now());
  return static_cast<int>(std::max<int64_t>(left.count(), 0));
}

ProvenConnection ProofGate::admitOne(int listeningFd, Clock::time_point until) {
  while (proven.empty()) {
    Clock::time_point now = Clock::now();
    if (now >= until)
      return {};
    int wait = static_cast<int>(
        std::chrono::ceil<std::chrono::milliseconds>(until - now).count());
    if (int untilDeadline = msUntilDeadline(); untilDeadline >= 0)
      wait = std::min(wait, untilDeadline);
    std::vector<pollfd> fds = {{listeningFd, POLLIN, 0}};
    addPollEntries(fds);
    if (::poll(fds.data(), fds.size(), wait) < 0 && errno != EINTR)
      return {};
    for (ProvenConnection &connection : advance(fds.data() + 1, fds.size() - 1))
      proven.push_back(std::move(connection));
    if (fds[0].revents)
      acceptFrom(listeningFd);
  }
  ProvenConnection connection = std::move(proven.front());
  proven.pop_front();
  setBlocking(connection.fd, true);
  return connection;
}

} // namespace pp::runtime

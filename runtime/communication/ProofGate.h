//===- ProofGate.h - connections proving the job secret at once -*- C++ -*-===//
//
// The accepting side of the job secret's proof (JobSecret.h) for a listener
// that anyone who reaches its port can connect to. It accepts without
// blocking, advances each connection's proof as its bytes arrive, polling
// all of them together on the caller's thread, and gives each connection
// one deadline for its whole proof. So a stranger that sends nothing, or a
// byte every few seconds, holds a connection for the deadline at most and
// never holds up a rank whose proof arrives meanwhile; and past a bound on
// the connections still proving, the oldest is dropped, so a flood of
// connections costs a bounded number of descriptors and no threads. Every
// refusal is logged with the peer's address (logRefusal); none is an error.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PROOFGATE_H
#define PP_RUNTIME_PROOFGATE_H

#include "runtime/communication/JobSecret.h"

#include <poll.h>

#include <chrono>
#include <deque>
#include <string>
#include <vector>

namespace pp::runtime {

/// A connection that proved the job's secret, and the key of the link it
/// opens (ProofChallenge::linkKey).
struct ProvenConnection {
  int fd = -1;
  std::string linkKey;
};

class ProofGate {
public:
  using Clock = std::chrono::steady_clock;

  /// Proves connections against `secret` for `listener` (the name that
  /// refusals are logged under: "the rendezvous store", "rank 2"), each
  /// within `deadline` of its accept, at most `maxPending` at a time.
  ProofGate(std::string secret, std::string listener,
            std::chrono::milliseconds deadline, size_t maxPending);
  /// Closes the connections proven and not yet taken, and refuses (logging)
  /// those still proving.
  ~ProofGate();
  ProofGate(const ProofGate &) = delete;
  ProofGate &operator=(const ProofGate &) = delete;

  /// Accepts connections waiting on the listening socket `listener` (made
  /// non-blocking) and sends each its challenge: as many as fit under the
  /// bound, else one, for which the oldest connection still proving is
  /// dropped. Call it after advance(), which the new entries would confuse.
  void acceptFrom(int listener);

  /// Appends to `fds` one entry per connection still proving, in the order
  /// advance() expects them.
  void addPollEntries(std::vector<pollfd> &fds) const;

  /// Advances the proofs after a poll of the `count` entries at `entries`
  /// that addPollEntries() appended, and drops, logging each, the
  /// connections refused, closed or past their deadline. Returns the
  /// connections that proved the secret (and were told so), non-blocking,
  /// for the caller to serve.
  std::vector<ProvenConnection> advance(const pollfd *entries, size_t count);

  /// Milliseconds until the earliest deadline of a connection still
  /// proving, -1 when none is: the timeout of the caller's poll.
  int msUntilDeadline() const;

  /// Accepts on `listener` and proves what connects until a connection has
  /// proved the secret or `until` has passed: that connection (blocking
  /// again), else one whose fd is -1. A connection proven alongside it
  /// waits for the next call.
  ProvenConnection admitOne(int listener, Clock::time_point until);

private:
  /// A connection that has been sent its challenge.
  struct Pending {
    int fd = -1;
    std::string address;
    ProofChallenge challenge;
    unsigned char response[ProofChallenge::kResponseBytes];
    size_t received = 0;
    Clock::time_point deadline;
  };

  /// Logs that `pending` is refused for `reason` and closes it.
  void refuse(Pending &pending, const std::string &reason);

  const std::string secret, listener;
  const std::chrono::milliseconds deadline;
  const size_t maxPending;
  /// Oldest first.
  std::deque<Pending> pending;
  /// Proven by admitOne()'s polls, not yet returned.
  std::deque<ProvenConnection> proven;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_PROOFGATE_H

//===- MessageLinks.h - direct connections for point-to-point messages ---===//
//
// One TCP connection between each two ranks of a job that exchange
// messages, for the stages' messages and the collectives made of them
// (LinkCollectives.h); each proved the job's secret before it carried a
// byte. A send writes the message (channel, slot, size, bytes) at once;
// a thread per connection reads what arrives into a queue per (channel,
// slot) that receives take from. So a send never waits for its receive and
// a message crosses the network once, whatever the order of the two;
// per message the cost is a write, a read and a wake-up, independent of how
// many messages a step has.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_MESSAGELINKS_H
#define PP_RUNTIME_MESSAGELINKS_H

#include "runtime/communication/Communicator.h"
#include "runtime/communication/LinkFrames.h"
#include "runtime/communication/MessageSeal.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pp::runtime {

class TcpStore;

class MessageLinks {
public:
  /// Connects rank `rank` of a job of `size` ranks to the ranks `peers`
  /// (increasing, without `rank`; each of them lists `rank` among its own):
  /// listens on `host` (this rank's address as the others reach it),
  /// publishes the address in `store`, connects to the lower peers and
  /// accepts the higher ones. Both ends of each link prove that they know the
  /// job's `secret` (JobSecret.h); the listener proves every connection
  /// alongside the others, each within a deadline (ProofGate.h), and refuses,
  /// logging on stderr, one that does not prove it, so that a stranger neither
  /// gets a link nor holds the ranks up, and one from a rank not among `peers`.
  /// The listener closes once every higher peer has connected. The links
  /// `integrity` names seal their messages with the key their proof gave
  /// (MessageSeal.h). Throws std::runtime_error when a peer does not
  /// connect within `timeout`.
  MessageLinks(int rank, int size, const std::vector<int> &peers,
               TcpStore &store, const std::string &host,
               const std::string &secret, LinkIntegrity integrity,
               std::chrono::milliseconds timeout);
  ~MessageLinks();
  MessageLinks(const MessageLinks &) = delete;
  MessageLinks &operator=(const MessageLinks &) = delete;

  /// Sends `size` bytes to job rank `peer` on (`channel`, `slot`); returns
  /// once they are written to the connection.
  void send(int peer, uint64_t channel, uint64_t slot, const void *bytes,
            size_t size);
  /// Receives the next message job rank `peer` sent on (`channel`, `slot`),
  /// which must have `size` bytes, waiting up to the timeout for it.
  void recv(int peer, uint64_t channel, uint64_t slot, Patience patience,
            void *bytes, size_t size);

  /// Receives, as recv() does, the next message of any size, without
  /// copying it.
  MessageBytes take(int peer, uint64_t channel, uint64_t slot,
                    Patience patience);

  /// Waits, as recv() does, until such a message has arrived, and leaves
  /// it for recv() to take.
  void await(int peer, uint64_t channel, uint64_t slot, Patience patience);

private:
  /// The connection to one peer and what arrived on it.
  struct Link {
    int fd = -1;
    /// Seals the messages both ways, unless null (LinkIntegrity); used
    /// under `writing` to send and by the reader to receive.
    std::unique_ptr<MessageSeal> seal;
    /// Serializes writes of whole messages.
    std::mutex writing;
    std::thread reader;
    /// Guarded by MessageLinks::mutex: messages not yet received, by
    /// (channel, slot), and why the connection ended, if it did.
    std::map<std::pair<uint64_t, uint64_t>, std::deque<MessageBytes>> arrived;
    std::string failure;
  };

  /// Waits (with `lock` on `mutex`) until a message from `peer` on
  /// (`channel`, `slot`) has arrived and returns its queue; throws when the
  /// wait times out or the connection ends first.
  std::deque<MessageBytes> &
  waitForMessage(std::unique_lock<std::mutex> &lock, int peer,
                 uint64_t channel, uint64_t slot, Patience patience);
  /// Reads messages from `peer` until its connection closes.
  void read(int peer);
  Link &link(int peer);

  int rank;
  std::chrono::milliseconds timeout;
  /// One per job rank; this rank's own entry and those of ranks it has no
  /// link with stay unconnected.
  std::vector<std::unique_ptr<Link>> links;
  std::mutex mutex;
  std::condition_variable arrivedOne;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_MESSAGELINKS_H

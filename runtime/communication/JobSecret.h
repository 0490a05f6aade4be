//===- JobSecret.h - a job's shared secret and proofs of it -----*- C++ -*-===//
//
// Every rank of a job knows the job's secret (PP_JOB_SECRET); a connection
// between them (to the rendezvous store, between ranks) starts with a
// mutual proof of it, so that nobody else can read or write the store's keys
// or talk to a rank. The proof is an HMAC-SHA256 challenge-response: the
// accepting side sends a random nonce, the connecting side answers with its
// own nonce and HMAC(secret, "pp-job-secret client" nonces), and an accepted
// client gets HMAC(secret, "pp-job-secret server" nonces) back, so that a
// rank also knows it reached its job. The secret itself never travels.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_JOBSECRET_H
#define PP_RUNTIME_JOBSECRET_H

#include <chrono>
#include <string>

namespace pp::runtime {

/// The environment variable that carries the job's secret to every rank.
inline constexpr const char *kJobSecretVariable = "PP_JOB_SECRET";

/// A fresh job secret: 32 random bytes (OpenSSL's RAND_bytes) in hex. A
/// launcher sets it as PP_JOB_SECRET in the environment of every rank it
/// starts. Throws std::runtime_error when no random bytes are available.
std::string generateJobSecret();

/// How long the accepting side gives a peer for the whole proof, from its
/// connection to its last byte: ranks answer at once; a stranger, however
/// slowly it sends, holds a connection open only this long.
constexpr std::chrono::milliseconds kProofTimeout = std::chrono::seconds(10);

/// The accepting side of one proof, for a caller that does its own reads
/// and writes (ProofGate, which proves many connections at once): send
/// challenge(), read kResponseBytes from the peer, send what answer()
/// returns.
class ProofChallenge {
public:
  /// Bytes of the challenge and of the peer's response to it.
  static constexpr size_t kChallengeBytes = 32, kResponseBytes = 64;

  /// Draws a fresh nonce; throws std::runtime_error when no random bytes
  /// are available.
  ProofChallenge();

  /// The kChallengeBytes to send the peer first.
  const unsigned char *challenge() const { return nonce; }

  /// The bytes to send back for the peer's `response` (kResponseBytes):
  /// this side's acceptance and its own proof when the response proves
  /// `secret`, else the refusal, with why in `refusal` ("" when accepted).
  std::string answer(const std::string &secret, const unsigned char *response,
                     std::string &refusal) const;

  /// The key of the link the proven `response` opens, which the peer's
  /// proveToPeer derives too: HMAC-SHA256 of both nonces under `secret`
  /// (MessageSeal.h).
  std::string linkKey(const std::string &secret,
                      const unsigned char *response) const;

private:
  unsigned char nonce[kChallengeBytes];
};

/// Logs on stderr that `listener` ("the rendezvous store", "rank 2")
/// refused a connection from `address` ("10.0.0.7:51234"), and `reason`.
void logRefusal(const std::string &listener, const std::string &address,
                const std::string &reason);

/// The connecting side: proves `secret` to the peer on `fd` and checks the
/// peer's proof; on success sets `linkKey` (when given) to the key of the
/// link the proof opens (ProofChallenge::linkKey). "" on success, else what
/// went wrong.
std::string proveToPeer(int fd, const std::string &secret,
                        std::string *linkKey = nullptr);

} // namespace pp::runtime

#endif // PP_RUNTIME_JOBSECRET_H

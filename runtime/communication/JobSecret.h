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

/// How long the accepting side waits for a peer's proof: ranks answer at
/// once, a silent stranger holds a listener up only this long.
constexpr std::chrono::milliseconds kProofTimeout = std::chrono::seconds(10);

/// The accepting side of the proof on the connected socket `fd` (with a
/// receive timeout set, against peers that never answer): "" when the peer
/// proved it knows `secret` (it has been told so), else why it is refused,
/// which is logged (logRefusal) before the peer hears of it.
std::string admitPeer(int fd, const std::string &secret,
                      const std::string &listener);

/// Logs on stderr that `listener` ("the rendezvous store", "rank 2")
/// refused the connection `fd`, naming the peer's address and `reason`.
void logRefusal(const std::string &listener, int fd, const std::string &reason);

/// The connecting side: proves `secret` to the peer on `fd` and checks the
/// peer's proof. "" on success, else what went wrong.
std::string proveToPeer(int fd, const std::string &secret);

} // namespace pp::runtime

#endif // PP_RUNTIME_JOBSECRET_H

//===- JobSecret.cpp - a job's shared secret and proofs of it -------------===//

#include "runtime/communication/JobSecret.h"
#include "runtime/communication/Socket.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <iostream>
#include <stdexcept>

namespace pp::runtime {
namespace {

constexpr size_t kNonceBytes = 32;
using Nonce = std::array<unsigned char, kNonceBytes>;
using Proof = std::array<unsigned char, 32>;

/// Answers of the accepting side after the client's proof.
constexpr char kAccepted = 'A', kRefused = 'R';

Nonce randomNonce() {
  Nonce nonce;
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1)
    throw std::runtime_error("cannot draw random bytes (OpenSSL RAND_bytes)");
  return nonce;
}

/// HMAC-SHA256(secret, role || server nonce || client nonce).
Proof prove(const std::string &secret, const std::string &role,
            const Nonce &server, const Nonce &client) {
  std::string message = "pp-job-secret " + role;
  message.append(server.begin(), server.end());
  message.append(client.begin(), client.end());
  Proof proof;
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char *>(message.data()), message.size(),
       proof.data(), &length);
  return proof;
}

bool same(const Proof &a, const Proof &b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace

std::string generateJobSecret() {
  Nonce bytes = randomNonce();
  static const char *digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : bytes) {
    hex += digits[byte >> 4];
    hex += digits[byte & 15];
  }
  return hex;
}

void logRefusal(const std::string &listener, int fd,
                const std::string &reason) {
  std::cerr << "pp: " + listener + " refused a connection from " +
                   peerAddress(fd) + ": " + reason + "\n";
}

std::string admitPeer(int fd, const std::string &secret,
                      const std::string &listener) {
  auto refuse = [&](const std::string &reason) {
    logRefusal(listener, fd, reason);
    return reason;
  };
  Nonce server = randomNonce(), client;
  Proof proof;
  if (!writeAll(fd, server.data(), server.size()) ||
      !readAll(fd, client.data(), client.size()) ||
      !readAll(fd, proof.data(), proof.size()))
    return refuse(
        "it sent no proof of the job secret (not a rank of this job?)");
  if (!same(proof, prove(secret, "client", server, client))) {
    std::string reason = refuse("its proof of the job secret is wrong (its "
                                "PP_JOB_SECRET differs from this rank's)");
    writeAll(fd, &kRefused, 1);
    return reason;
  }
  Proof answer = prove(secret, "server", server, client);
  if (!writeAll(fd, &kAccepted, 1) ||
      !writeAll(fd, answer.data(), answer.size()))
    return refuse("it left during the proof of the job secret");
  return "";
}

std::string proveToPeer(int fd, const std::string &secret) {
  Nonce server, client = randomNonce();
  if (!readAll(fd, server.data(), server.size()))
    return "it sent no challenge (is it a pp rank?)";
  Proof proof = prove(secret, "client", server, client);
  char verdict = 0;
  if (!writeAll(fd, client.data(), client.size()) ||
      !writeAll(fd, proof.data(), proof.size()) || !readAll(fd, &verdict, 1))
    return "it closed the connection during the proof of the job secret";
  if (verdict == kRefused)
    return "it refused this rank's PP_JOB_SECRET; set the same PP_JOB_SECRET "
           "on every rank";
  Proof answer;
  if (verdict != kAccepted || !readAll(fd, answer.data(), answer.size()) ||
      !same(answer, prove(secret, "server", server, client)))
    return "it does not know the job's secret (another program listens "
           "there?)";
  return "";
}

} // namespace pp::runtime

//===- JobSecret.cpp - a job's shared secret and proofs of it -------------===//

#include "runtime/communication/JobSecret.h"
#include "runtime/communication/Socket.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
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

static_assert(ProofChallenge::kChallengeBytes == kNonceBytes &&
                  ProofChallenge::kResponseBytes ==
                      kNonceBytes + std::tuple_size_v<Proof>,
              "a response is the client's nonce and its proof");

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

void logRefusal(const std::string &listener, const std::string &address,
                const std::string &reason) {
  std::cerr << "pp: " + listener + " refused a connection from " + address +
                   ": " + reason + "\n";
}

ProofChallenge::ProofChallenge() {
  Nonce drawn = randomNonce();
  std::copy(drawn.begin(), drawn.end(), nonce);
}

std::string ProofChallenge::answer(const std::string &secret,
                                   const unsigned char *response,
                                   std::string &refusal) const {
  Nonce server, client;
  Proof proof;
  std::copy(nonce, nonce + kChallengeBytes, server.begin());
  std::copy(response, response + kNonceBytes, client.begin());
  std::copy(response + kNonceBytes, response + kResponseBytes, proof.begin());
  if (!same(proof, prove(secret, "client", server, client))) {
    refusal = "its proof of the job secret is wrong (its PP_JOB_SECRET "
              "differs from this rank's)";
    return std::string(1, kRefused);
  }
  refusal.clear();
  Proof mine = prove(secret, "server", server, client);
  return kAccepted + std::string(mine.begin(), mine.end());
}

std::string ProofChallenge::linkKey(const std::string &secret,
                                    const unsigned char *response) const {
  Nonce server, client;
  std::copy(nonce, nonce + kChallengeBytes, server.begin());
  std::copy(response, response + kNonceBytes, client.begin());
  Proof key = prove(secret, "link", server, client);
  return std::string(key.begin(), key.end());
}

std::string proveToPeer(int fd, const std::string &secret,
                        std::string *linkKey) {
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
  if (linkKey) {
    Proof key = prove(secret, "link", server, client);
    linkKey->assign(key.begin(), key.end());
  }
  return "";
}

} // namespace pp::runtime

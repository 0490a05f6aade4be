//===- PackageAgreement.cpp - every rank runs the same package ------------===//

#include "runtime/training/PackageAgreement.h"

#include "runtime/core/Sha256.h"
#include "runtime/training/JobExchanges.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace pp::runtime {

std::string packageIdentity(const Package &package) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto &[name, digest] : package.files)
    if (name.size() < 3 || name.compare(name.size() - 3, 3, ".so") != 0)
      files[name] = {digest.bytes, digest.sha256};
  std::string text = nlohmann::json{
      {"mesh", package.mesh.describe()},
      {"stages", package.numStages},
      {"microbatch_size", package.microbatchSize},
      {"files", files}}.dump();
  Sha256 sha;
  sha.update(text.data(), text.size());
  return sha.hex();
}

void checkSamePackage(RankGroups &groups, const std::string &identity) {
  std::vector<std::string> identities = gatherTextToRank0(groups, identity);
  std::string refusal, differing;
  int count = 0;
  for (size_t rank = 1; rank < identities.size(); ++rank)
    if (identities[rank] != identities[0]) {
      differing += (count++ ? ", " : "") + std::to_string(rank) + " (on " +
                   groups.machines.at(rank) + ")";
    }
  if (count > 0)
    refusal = (count == 1 ? "rank " : "ranks ") + differing +
              " loaded another package than rank 0 (on " +
              groups.machines.at(0) +
              "): its stage sources, parameters or mesh differ, so the "
              "ranks would not exchange the same tensors. Every machine "
              "must run the same package: compile it once and give every "
              "machine its directory, share --cache-dir, or pin the cuts "
              "with --split-points";
  broadcastTextFromRank0(groups, refusal);
  if (!refusal.empty())
    throw std::runtime_error(refusal);
}

} // namespace pp::runtime

//===- PackageAgreement.cpp - every rank runs the same package ------------===//

#include "runtime/training/PackageAgreement.h"

#include "runtime/core/Sha256.h"

#include <nlohmann/json.hpp>

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

const char *const kPackageDisagreement =
    "loaded another package than rank 0: its stage sources, parameters or "
    "mesh differ, so the ranks would not exchange the same tensors. Every "
    "machine must run the same package: compile it once and give every "
    "machine its directory, share --cache-dir, or pin the cuts with "
    "--split-points";

} // namespace pp::runtime

//===- TiedParameters.cpp - weights held by several stages ----------------===//

#include "runtime/training/TiedParameters.h"

#include "runtime/core/Sha256.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {

TiedParameters::TiedParameters(const Package &package, Communicator &pipeline,
                               int64_t rank) {
  for (const ParameterInfo &parameter : package.parameters) {
    if (!parameter.isTied() || parameter.tensor.role != Role::Parameter)
      continue;
    // Holders on one rank share its copy and add into one gradient.
    std::vector<int64_t> ranks;
    for (int64_t stage : parameter.stages)
      ranks.push_back(package.stageRanks[stage]);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    if (ranks.size() < 2 ||
        std::find(ranks.begin(), ranks.end(), rank) == ranks.end())
      continue;
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](auto &g) { return g.ranks == ranks; });
    if (group == groups.end()) {
      groups.push_back({ranks, pipeline.split("tied", ranks), {}});
      group = std::prev(groups.end());
    }
    group->names.push_back(parameter.tensor.name);
  }
}

void TiedParameters::sumGradients(
    const std::map<std::string, TensorPtr> &gradients) {
  for (Group &group : groups) {
    std::vector<float> parts;
    for (const std::string &name : group.names) {
      pp_tensor *gradient = gradients.at(name).get();
      const float *values =
          static_cast<const float *>(pp_tensor_data(gradient));
      parts.insert(parts.end(), values, values + pp_tensor_numel(gradient));
    }
    size_t count = parts.size();
    std::vector<float> all(count * group.ranks.size());
    group.holders->allGather(parts.data(), count, all.data());
    for (size_t i = 0; i < count; ++i) {
      double sum = 0;
      for (size_t holder = 0; holder < group.ranks.size(); ++holder)
        sum += all[holder * count + i];
      parts[i] = static_cast<float>(sum);
    }
    const float *at = parts.data();
    for (const std::string &name : group.names) {
      pp_tensor *gradient = gradients.at(name).get();
      size_t n = pp_tensor_numel(gradient);
      std::memcpy(pp_tensor_data(gradient), at, n * sizeof(float));
      at += n;
    }
  }
}

void TiedParameters::checkHoldersAgree(
    const std::map<std::string, TensorPtr> &parameters) {
  // Every group compares before any throws, so that no holder waits for
  // one that gave up.
  std::string problem;
  for (Group &group : groups) {
    Sha256 hash;
    for (const std::string &name : group.names) {
      pp_tensor *parameter = parameters.at(name).get();
      hash.update(pp_tensor_data(parameter),
                  pp_tensor_numel(parameter) * sizeof(float));
    }
    // The digest travels as floats: the gather copies their bytes.
    constexpr size_t kFloats = 32 / sizeof(float);
    std::array<float, kFloats> mine;
    std::array<unsigned char, 32> digest = hash.digest();
    std::memcpy(mine.data(), digest.data(), digest.size());
    std::vector<float> all(kFloats * group.ranks.size());
    group.holders->allGather(mine.data(), kFloats, all.data());
    for (size_t holder = 1; holder < group.ranks.size() && problem.empty();
         ++holder)
      if (std::memcmp(all.data(), all.data() + holder * kFloats,
                      digest.size()) != 0) {
        std::string names;
        for (const std::string &name : group.names)
          names += (names.empty() ? "'" : ", '") + name + "'";
        problem = "the copies of the tied parameters " + names +
                  " on pipeline ranks " + std::to_string(group.ranks.front()) +
                  " and " + std::to_string(group.ranks[holder]) +
                  " differ after training; they must stay the same bits (a "
                  "bug in pp: please report it with the model)";
      }
  }
  if (!problem.empty())
    throw std::runtime_error(problem);
}

} // namespace pp::runtime

//===- TiedParameters.cpp - gradients summed from parts -------------------===//

#include "runtime/training/TiedParameters.h"

#include "runtime/core/Sha256.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

namespace pp::runtime {

TiedParameters::TiedParameters(const Package &package, Communicator &pipeline,
                               int64_t rank)
    : rank(rank) {
  for (const ParameterInfo &parameter : package.parameters) {
    if (parameter.tensor.role != Role::Parameter ||
        parameter.gradientPartStages.empty())
      continue;
    // Holders on one rank share its copy.
    std::vector<int64_t> ranks;
    for (int64_t stage : parameter.stages)
      ranks.push_back(package.stageRanks[stage]);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end() ||
        (ranks.size() < 2 && parameter.gradientPartStages.size() < 2))
      continue;
    Summed summed{parameter.tensor.name, numElements(parameter.tensor.shape),
                  {}};
    for (int64_t stage : parameter.gradientPartStages)
      summed.partRanks.push_back(package.stageRanks[stage]);
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](auto &g) { return g.ranks == ranks; });
    if (group == groups.end()) {
      groups.push_back(
          {ranks, ranks.size() > 1 ? pipeline.split("tied", ranks) : nullptr,
           {}});
      group = std::prev(groups.end());
    }
    group->parameters.push_back(std::move(summed));
  }
}

void TiedParameters::sumGradients(
    const std::map<GradientPartKey, pp_tensor *> &parts,
    const std::map<std::string, TensorPtr> &gradients) {
  for (Group &group : groups)
    for (const Summed &parameter : group.parameters) {
      // Each part where it was computed, then from there on every holder.
      size_t count = parameter.partRanks.size();
      std::vector<std::vector<float>> received(count);
      std::vector<const float *> values(count);
      for (size_t part = 0; part < count; ++part) {
        int64_t from = parameter.partRanks[part];
        float *at;
        if (from == rank) {
          at = static_cast<float *>(pp_tensor_data(parts.at(
              {parameter.name, static_cast<int64_t>(part)})));
        } else {
          received[part].resize(parameter.elements);
          at = received[part].data();
        }
        if (group.holders)
          group.holders->broadcast(
              at, parameter.elements * sizeof(float),
              static_cast<int>(std::find(group.ranks.begin(),
                                         group.ranks.end(), from) -
                               group.ranks.begin()));
        values[part] = at;
      }
      // Element by element, so that the gradient may be one of the parts.
      float *sum = static_cast<float *>(
          pp_tensor_data(gradients.at(parameter.name).get()));
      for (int64_t i = 0; i < parameter.elements; ++i) {
        double total = 0;
        for (const float *part : values)
          total += part[i];
        sum[i] = static_cast<float>(total);
      }
    }
}

void TiedParameters::checkHoldersAgree(
    const std::map<std::string, TensorPtr> &parameters) {
  // Every group compares before any throws, so that no holder waits for
  // one that gave up.
  std::string problem;
  for (Group &group : groups) {
    if (!group.holders)
      continue;
    Sha256 hash;
    for (const Summed &summed : group.parameters) {
      pp_tensor *parameter = parameters.at(summed.name).get();
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
        for (const Summed &summed : group.parameters)
          names += (names.empty() ? "'" : ", '") + summed.name + "'";
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

namespace pp::runtime {

bool TiedParameters::forms(const std::string &name) const {
  for (const Group &group : groups)
    for (const Summed &summed : group.parameters)
      if (summed.name == name)
        return true;
  return false;
}

} // namespace pp::runtime

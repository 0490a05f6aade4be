//===- RankStages.cpp - the stages a pipeline rank runs -------------------===//

#include "runtime/training/RankStages.h"

#include <algorithm>

namespace pp::runtime {

RankStages::RankStages(const Package &package, int64_t rank)
    : package(package), pipelineRank(rank) {
  for (int64_t s = 0; s < package.numStages; ++s)
    if (holds(s))
      held.push_back(s);
}

bool RankStages::holdsCopyOf(const ParameterInfo &parameter) const {
  return std::any_of(parameter.stages.begin(), parameter.stages.end(),
                     [&](int64_t s) { return holds(s); });
}

} // namespace pp::runtime

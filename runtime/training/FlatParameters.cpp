//===- FlatParameters.cpp - a stage's trained parameters, flat ------------===//

#include "runtime/training/FlatParameters.h"

namespace pp::runtime {

FlatParameters::FlatParameters(std::vector<FlatParameter> parameters,
                               int64_t shares, Queue &queue)
    : laidOut(std::move(parameters)) {
  for (FlatParameter &parameter : laidOut) {
    parameter.offset = elements;
    elements += parameter.count;
  }
  int64_t padded = (elements + shares - 1) / shares * shares;
  valueBuffer = std::make_unique<ReleasableBuffer>(padded, queue);
  gradientBuffer = std::make_unique<ReleasableBuffer>(padded, queue);
}

const FlatParameter *FlatParameters::find(const std::string &name) const {
  for (const FlatParameter &parameter : laidOut)
    if (parameter.name == name)
      return &parameter;
  return nullptr;
}

} // namespace pp::runtime

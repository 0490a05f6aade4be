//===- FlatParameters.cpp - a stage's trained parameters, flat ------------===//

#include "runtime/training/FlatParameters.h"

namespace pp::runtime {

FlatParameters::FlatParameters(std::vector<FlatParameter> parameters)
    : laidOut(std::move(parameters)) {
  int64_t offset = 0;
  for (FlatParameter &parameter : laidOut) {
    parameter.offset = offset;
    offset += parameter.count;
  }
  valueBuffer.assign(offset, 0.0f);
  gradientBuffer.assign(offset, 0.0f);
}

const FlatParameter *FlatParameters::find(const std::string &name) const {
  for (const FlatParameter &parameter : laidOut)
    if (parameter.name == name)
      return &parameter;
  return nullptr;
}

} // namespace pp::runtime

//===- ParameterInit.cpp - first values of parameters ---------------------===//

#include "runtime/training/ParameterInit.h"

#include "runtime/core/EnumNames.h"
#include "runtime/data/SyntheticData.h"

#include <algorithm>
#include <cmath>

namespace pp::runtime {
namespace {

constexpr EnumNames<ParameterInit, 2> kInits = {
    {ParameterInit::Model, "model"},
    {ParameterInit::Random, "random"},
};

/// Fills `tensor` uniformly in [-bound, bound) from stream "init/" + name.
void fillUniform(pp_tensor *tensor, const std::string &name, uint64_t seed,
                 int64_t fanIn) {
  fillSynthetic(tensor, seed, "init/" + name, 0, 0);
  float bound =
      1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(1, fanIn)));
  float *values = static_cast<float *>(pp_tensor_data(tensor));
  for (int64_t i = 0, n = pp_tensor_numel(tensor); i < n; ++i)
    values[i] *= bound;
}

} // namespace

std::optional<ParameterInit> parseParameterInit(const std::string &name) {
  return parseEnum(kInits, name);
}

const char *parameterInitName(ParameterInit init) {
  return enumName(kInits, init, "unknown");
}

void fillMissingParameter(pp_tensor *tensor, const std::string &name) {
  int64_t rank = pp_tensor_rank(tensor);
  fillUniform(tensor, name, 0,
              rank == 0 ? 1 : pp_tensor_shape(tensor)[rank - 1]);
}

void fillRandomParameter(pp_tensor *tensor, const std::string &name,
                         uint64_t seed) {
  int64_t rank = pp_tensor_rank(tensor), n = pp_tensor_numel(tensor);
  if (rank >= 2) {
    int64_t rows = pp_tensor_shape(tensor)[0];
    fillUniform(tensor, name, seed, rows == 0 ? 1 : n / rows);
    return;
  }
  std::string last = name.substr(name.find_last_of("./") + 1);
  float value = last == "weight" || last == "scale" || last == "gamma";
  std::fill_n(static_cast<float *>(pp_tensor_data(tensor)), n, value);
}

} // namespace pp::runtime

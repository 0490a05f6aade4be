//===- GradientReduction.cpp - data-parallel gradient sums ----------------===//

#include "runtime/training/GradientReduction.h"

#include <algorithm>
#include <cstring>

namespace pp::runtime {

void allReduceGradients(Communicator &dataParallel,
                        const std::vector<pp_tensor *> &gradients,
                        size_t bucketBytes) {
  if (dataParallel.worldSize() == 1)
    return;
  size_t bucketFloats = std::max<size_t>(1, bucketBytes / sizeof(float));
  std::vector<float> bucket;
  for (size_t first = 0; first < gradients.size();) {
    // Gather tensors until the next would overflow the bucket.
    size_t last = first, floats = 0;
    do {
      floats += pp_tensor_numel(gradients[last]);
      ++last;
    } while (last < gradients.size() &&
             floats + pp_tensor_numel(gradients[last]) <= bucketFloats);
    bucket.resize(floats);
    float *at = bucket.data();
    for (size_t i = first; i < last; ++i) {
      size_t n = pp_tensor_numel(gradients[i]);
      std::memcpy(at, pp_tensor_data(gradients[i]), n * sizeof(float));
      at += n;
    }
    dataParallel.allReduceSum(bucket.data(), bucket.size());
    at = bucket.data();
    for (size_t i = first; i < last; ++i) {
      size_t n = pp_tensor_numel(gradients[i]);
      std::memcpy(pp_tensor_data(gradients[i]), at, n * sizeof(float));
      at += n;
    }
    first = last;
  }
}

} // namespace pp::runtime

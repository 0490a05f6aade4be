//===- LaneSums.h - sums in a fixed order that vectorizes ------*- C++ -*-===//
//
// A row's sum in the kernels (softmax's normalizer, layer_norm's moments)
// adds element j into partial sum j mod kSumLanes, in element order, then
// the partial sums in order: an order fixed by the row's length alone, so
// that a run gives the same bits at every stage and thread count, and the
// partial sums are independent, so that the loop vectorizes without
// reassociating anything.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_LANESUMS_H
#define PP_RUNTIME_KERNELS_LANESUMS_H

#include <array>
#include <cstdint>

namespace pp::runtime::cpu {

/// The partial sums of a row's sum: 8 doubles, one AVX-512 register.
constexpr int64_t kSumLanes = 8;

/// The sum of term(j) (a double) for j in [0, size), in the order above.
template <typename Term> inline double laneSum(int64_t size, Term term) {
  std::array<double, kSumLanes> sums{};
  int64_t whole = size - size % kSumLanes;
  for (int64_t j = 0; j < whole; j += kSumLanes)
    for (int64_t l = 0; l < kSumLanes; ++l)
      sums[l] += term(j + l);
  for (int64_t j = whole; j < size; ++j)
    sums[j - whole] += term(j);
  double total = 0;
  for (double sum : sums)
    total += sum;
  return total;
}

} // namespace pp::runtime::cpu

#endif // PP_RUNTIME_KERNELS_LANESUMS_H

//===- PlacedTensor.h - tensors over memory someone else owns ---*- C++ -*-===//
//
// A stage function's arena (runtime/kernels/MemoryArena.h) hands out
// tensors at planned offsets of one buffer. Their headers belong to the
// arena too, which reuses them call after call, so the steady state
// allocates nothing.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_CORE_PLACEDTENSOR_H
#define PP_RUNTIME_CORE_PLACEDTENSOR_H

#include "runtime/pp_runtime.h"

#include <optional>
#include <vector>

namespace pp::runtime {

/// The bytes of a tensor of `dtype` and `shape`, or nullopt for an unknown
/// dtype, a negative size or more bytes than size_t counts.
std::optional<size_t> tensorBytes(pp_dtype dtype,
                                  const std::vector<int64_t> &shape);

/// A placed tensor header, empty until placeTensor; null when out of
/// memory. pp_tensor_destroy leaves it and its memory alone:
/// destroyPlacedTensor frees the header.
pp_tensor *createPlacedTensor();

/// Points the placed tensor `tensor` at `data`, holding `dtype` values of
/// `shape` (tensorBytes of them, which the caller has checked).
void placeTensor(pp_tensor *tensor, pp_dtype dtype,
                 const std::vector<int64_t> &shape, void *data);

/// True for a header from createPlacedTensor.
bool isPlacedTensor(const pp_tensor *tensor);

/// Frees a header from createPlacedTensor (not the memory it points at).
void destroyPlacedTensor(pp_tensor *tensor);

} // namespace pp::runtime

#endif // PP_RUNTIME_CORE_PLACEDTENSOR_H

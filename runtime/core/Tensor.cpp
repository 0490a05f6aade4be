//===- Tensor.cpp - host tensors --------------------------------*- C++ -*-===//

#include "runtime/core/Error.h"
#include "runtime/core/HostCache.h"
#include "runtime/core/PlacedTensor.h"
#include "runtime/core/ReshapedTensor.h"
#include "runtime/device/Device.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

using pp::runtime::failWith;
using pp::runtime::kHostAlignment;

struct pp_tensor {
  pp_dtype dtype;
  std::vector<int64_t> shape;
  int64_t numel;
  size_t nbytes;
  void *data;
  /// Where `data` lives.
  const pp_device *device;
  /// Frees `data`; null for borrowed memory and for a placed tensor.
  const pp_allocator *allocator;
  /// A placed tensor (PlacedTensor.h): its memory and header belong to an
  /// arena.
  bool placed;
};

namespace {

/// Every dtype with its size and name: the one place that spells them.
struct DtypeInfo {
  pp_dtype dtype;
  size_t size;
  const char *name;
};
constexpr DtypeInfo kDtypes[] = {
    {PP_DTYPE_F32, 4, "f32"},   {PP_DTYPE_F16, 2, "f16"},
    {PP_DTYPE_BF16, 2, "bf16"}, {PP_DTYPE_F64, 8, "f64"},
    {PP_DTYPE_I32, 4, "i32"},   {PP_DTYPE_I64, 8, "i64"},
    {PP_DTYPE_BOOL, 1, "i1"},
};

const DtypeInfo *findDtype(pp_dtype dtype) {
  for (const DtypeInfo &info : kDtypes)
    if (info.dtype == dtype)
      return &info;
  return nullptr;
}

} // namespace

extern "C" size_t pp_dtype_size(pp_dtype dtype) {
  const DtypeInfo *info = findDtype(dtype);
  return info ? info->size : 0;
}

extern "C" const char *pp_dtype_name(pp_dtype dtype) {
  const DtypeInfo *info = findDtype(dtype);
  return info ? info->name : "unknown";
}

extern "C" pp_status pp_dtype_from_name(const char *name, pp_dtype *out) {
  std::string known;
  for (const DtypeInfo &info : kDtypes) {
    if (name && std::strcmp(name, info.name) == 0) {
      *out = info.dtype;
      return PP_OK;
    }
    known += std::string(known.empty() ? "" : ", ") + info.name;
  }
  return failWith(PP_ERROR_INVALID_ARGUMENT, "unknown dtype '",
                  name ? name : "(null)", "'; known dtypes: ", known);
}

namespace {

/// Zero-filled, 64-byte-aligned host memory.
void *allocateHost(const pp_allocator *, size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t padded = (nbytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void *data = std::aligned_alloc(kHostAlignment,
                                  padded == 0 ? kHostAlignment : padded);
  if (data)
    std::memset(data, 0, nbytes);
  return data;
}

void releaseHost(const pp_allocator *, void *data) { std::free(data); }

const pp_allocator hostAllocator = {allocateHost, releaseHost, nullptr,
                                    nullptr};

} // namespace

extern "C" pp_status pp_tensor_create(pp_dtype dtype, int64_t rank,
                                      const int64_t *shape, pp_tensor **out) {
  return pp_tensor_create_in(&hostAllocator, dtype, rank, shape, out);
}

namespace {

/// The element count and bytes of a tensor of `dtype` and `shape`, or the
/// error status (recorded for pp_last_error) of a shape pp_tensor_create
/// refuses; `function` names the caller in errors.
pp_status countTensor(const char *function, pp_dtype dtype, int64_t rank,
                      const int64_t *shape, int64_t &numel, size_t &nbytes) {
  size_t elementSize = pp_dtype_size(dtype);
  if (elementSize == 0)
    return failWith(PP_ERROR_INVALID_ARGUMENT, function, ": unknown dtype ",
                    static_cast<int>(dtype));
  if (rank < 0 || (rank > 0 && !shape))
    return failWith(PP_ERROR_INVALID_ARGUMENT, function, ": rank ", rank,
                    " needs a shape of that many sizes");
  numel = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] < 0)
      return failWith(PP_ERROR_INVALID_ARGUMENT, function, ": dimension ", d,
                      " has negative size ", shape[d]);
    if (shape[d] != 0 && numel > std::numeric_limits<int64_t>::max() /
                                     static_cast<int64_t>(elementSize) /
                                     shape[d])
      return failWith(PP_ERROR_INVALID_ARGUMENT, function,
                      ": the shape holds more bytes than int64_t can count");
    numel *= shape[d];
  }
  nbytes = static_cast<size_t>(numel) * elementSize;
  return PP_OK;
}

/// A tensor of `shape` on `device` over a buffer from `allocate` (given the
/// byte count), released by `allocator` (null: borrowed); `function` names
/// the caller in errors.
template <typename Allocate>
pp_status createTensor(const char *function, pp_dtype dtype, int64_t rank,
                       const int64_t *shape, const pp_device *device,
                       Allocate &&allocate, const pp_allocator *allocator,
                       pp_tensor **out) {
  if (!out)
    return failWith(PP_ERROR_INVALID_ARGUMENT, function,
                    ": the output pointer is NULL");
  *out = nullptr;
  int64_t numel = 0;
  size_t nbytes = 0;
  if (pp_status status =
          countTensor(function, dtype, rank, shape, numel, nbytes);
      status != PP_OK)
    return status;
  void *data = allocate(nbytes);
  if (!data)
    return failWith(PP_ERROR_OUT_OF_MEMORY, function, ": cannot allocate ",
                    nbytes, " bytes");
  auto *tensor = new (std::nothrow)
      pp_tensor{dtype,  std::vector<int64_t>(shape, shape + rank),
                numel,  nbytes,
                data,   device ? device : pp_host_device(),
                allocator, /*placed=*/false};
  if (!tensor) {
    if (allocator)
      allocator->release(allocator, data);
    return failWith(PP_ERROR_OUT_OF_MEMORY, function,
                    ": cannot allocate the tensor header");
  }
  *out = tensor;
  return PP_OK;
}

} // namespace

extern "C" pp_status pp_tensor_create_in(const pp_allocator *allocator,
                                         pp_dtype dtype, int64_t rank,
                                         const int64_t *shape,
                                         pp_tensor **out) {
  if (!allocator)
    return failWith(PP_ERROR_INVALID_ARGUMENT,
                    "pp_tensor_create_in: the allocator is NULL");
  return createTensor(
      "pp_tensor_create", dtype, rank, shape, allocator->device,
      [&](size_t nbytes) { return allocator->allocate(allocator, nbytes); },
      allocator, out);
}

extern "C" pp_status pp_tensor_borrow_on(const pp_device *device, void *data,
                                         pp_dtype dtype, int64_t rank,
                                         const int64_t *shape,
                                         pp_tensor **out) {
  if (!data || !device)
    return failWith(PP_ERROR_INVALID_ARGUMENT, "pp_tensor_borrow: the ",
                    data ? "device" : "data", " pointer is NULL");
  return createTensor(
      "pp_tensor_borrow", dtype, rank, shape, device,
      [&](size_t) { return data; }, nullptr, out);
}

extern "C" pp_status pp_tensor_borrow(void *data, pp_dtype dtype,
                                      int64_t rank, const int64_t *shape,
                                      pp_tensor **out) {
  return pp_tensor_borrow_on(pp_host_device(), data, dtype, rank, shape, out);
}

extern "C" void pp_tensor_destroy(pp_tensor *tensor) {
  if (!tensor || tensor->placed)
    return;
  if (tensor->allocator)
    tensor->allocator->release(tensor->allocator, tensor->data);
  delete tensor;
}

namespace pp::runtime {

std::optional<size_t> tensorBytes(pp_dtype dtype,
                                  const std::vector<int64_t> &shape) {
  int64_t numel = 0;
  size_t nbytes = 0;
  if (countTensor("pp_tensor_create", dtype,
                  static_cast<int64_t>(shape.size()), shape.data(), numel,
                  nbytes) != PP_OK)
    return std::nullopt;
  return nbytes;
}

pp_tensor *createPlacedTensor() {
  return new (std::nothrow) pp_tensor{
      PP_DTYPE_F32, {}, 0, 0, nullptr, pp_host_device(), nullptr, true};
}

void placeTensor(pp_tensor *tensor, pp_dtype dtype,
                 const std::vector<int64_t> &shape, void *data) {
  tensor->dtype = dtype;
  // Same rank as the header's last use in the steady state: no allocation.
  tensor->shape.assign(shape.begin(), shape.end());
  tensor->numel = 1;
  for (int64_t size : shape)
    tensor->numel *= size;
  tensor->nbytes = static_cast<size_t>(tensor->numel) * pp_dtype_size(dtype);
  tensor->data = data;
}

bool isPlacedTensor(const pp_tensor *tensor) { return tensor->placed; }

void reshapeTensor(pp_tensor *tensor, const std::vector<int64_t> &shape) {
  tensor->shape.assign(shape.begin(), shape.end());
}

void destroyPlacedTensor(pp_tensor *tensor) { delete tensor; }

} // namespace pp::runtime

extern "C" pp_dtype pp_tensor_dtype(const pp_tensor *tensor) {
  return tensor->dtype;
}
extern "C" int64_t pp_tensor_rank(const pp_tensor *tensor) {
  return static_cast<int64_t>(tensor->shape.size());
}
extern "C" const int64_t *pp_tensor_shape(const pp_tensor *tensor) {
  return tensor->shape.data();
}
extern "C" int64_t pp_tensor_numel(const pp_tensor *tensor) {
  return tensor->numel;
}
extern "C" size_t pp_tensor_nbytes(const pp_tensor *tensor) {
  return tensor->nbytes;
}
extern "C" void *pp_tensor_data(pp_tensor *tensor) { return tensor->data; }
extern "C" const pp_device *pp_tensor_device(const pp_tensor *tensor) {
  return tensor->device;
}

/*===- pp_runtime.h - the pp runtime C ABI -------------------------*- C -*-===*
 *
 * The only interface that generated pipeline code and pp-run use. It has no
 * MLIR dependency. Every fallible call returns a pp_status; on failure
 * pp_last_error() describes what went wrong on the calling thread.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PP_RUNTIME_PP_RUNTIME_H
#define PP_RUNTIME_PP_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Result of a runtime call. */
typedef enum pp_status {
  PP_OK = 0,
  PP_ERROR_INVALID_ARGUMENT = 1,
  PP_ERROR_OUT_OF_MEMORY = 2,
  PP_ERROR_INTERNAL = 3,
} pp_status;

/* Element types of runtime tensors. F16 is IEEE half precision, BF16
 * bfloat16 (2 bytes each); BOOL is one byte per element. */
typedef enum pp_dtype {
  PP_DTYPE_F32 = 0,
  PP_DTYPE_F64 = 1,
  PP_DTYPE_I32 = 2,
  PP_DTYPE_I64 = 3,
  PP_DTYPE_BOOL = 4,
  PP_DTYPE_F16 = 5,
  PP_DTYPE_BF16 = 6,
} pp_dtype;

/* The message of the last failed call on this thread ("" if none). */
const char *pp_last_error(void);

/* Bytes per element of `dtype`; 0 for an unknown value. */
size_t pp_dtype_size(pp_dtype dtype);
/* The manifest's spelling of `dtype`: "f32", "f16", "bf16", "f64", "i32",
 * "i64", "i1" (bool); "unknown" for an unknown value. */
const char *pp_dtype_name(pp_dtype dtype);
/* The dtype spelled `name` (as pp_dtype_name spells it) in `out`;
 * PP_ERROR_INVALID_ARGUMENT for another name. */
pp_status pp_dtype_from_name(const char *name, pp_dtype *out);

/* The kinds of device a tensor's memory can live on. */
typedef enum pp_device_kind {
  PP_DEVICE_CPU = 0,
  PP_DEVICE_CUDA = 1,
} pp_device_kind;

/* A device of the runtime's device layer (runtime/device/Device.h): the
 * host (pp_host_device) or a GPU. Tensors record the one their memory lives
 * on (pp_tensor_device). */
typedef struct pp_device pp_device;

/* The host: the one CPU device of the process, ordinal 0. */
const pp_device *pp_host_device(void);
/* What kind of device `device` is. */
pp_device_kind pp_device_get_kind(const pp_device *device);
/* The device's index among the devices of its kind (a CUDA device's
 * number; 0 for the host). */
int pp_device_ordinal(const pp_device *device);
/* "cpu" or "cuda"; "unknown" for an unknown value. */
const char *pp_device_kind_name(pp_device_kind kind);

/* A dense, row-major tensor on a device: one that owns its buffer (64-byte-
 * aligned on the host) or one that borrows it (pp_tensor_borrow). */
typedef struct pp_tensor pp_tensor;

/* Allocates a zero-filled host tensor. `shape` holds `rank` non-negative
 * sizes (it may be NULL when rank is 0). */
pp_status pp_tensor_create(pp_dtype dtype, int64_t rank, const int64_t *shape,
                           pp_tensor **out);

/* Where a tensor's buffer lives and how it is made and freed: `allocate`
 * returns `bytes` of memory on `device` (NULL when it cannot), `release`
 * frees what it returned; both are given the allocator itself, so that
 * `context` (the allocator's own state, such as the queue whose order its
 * allocations follow) reaches them. A NULL `device` is the host.
 * pp_tensor_create uses zero-filled host memory; the device layer's queues
 * make allocators in their order (a CUDA queue: stream-ordered device
 * memory). */
typedef struct pp_allocator pp_allocator;
struct pp_allocator {
  void *(*allocate)(const pp_allocator *self, size_t bytes);
  void (*release)(const pp_allocator *self, void *data);
  const pp_device *device;
  void *context;
};

/* Uninitialized, 64-byte-aligned host memory that the calling thread
 * reuses after it is freed: what kernels allocate their results from. */
const pp_allocator *pp_host_cache_allocator(void);

/* Like pp_tensor_create, with the buffer from `allocator` (not zeroed
 * unless the allocator zeroes it), on the allocator's device. The allocator
 * must outlive the tensor. */
pp_status pp_tensor_create_in(const pp_allocator *allocator, pp_dtype dtype,
                              int64_t rank, const int64_t *shape,
                              pp_tensor **out);

/* A host tensor over `data`, which its caller owns and keeps alive until
 * the tensor is destroyed (which leaves `data` alone): a view of part of a
 * larger buffer, such as a stage's flat parameters. */
pp_status pp_tensor_borrow(void *data, pp_dtype dtype, int64_t rank,
                           const int64_t *shape, pp_tensor **out);

/* pp_tensor_borrow for memory on `device` (a GPU's memory, say). */
pp_status pp_tensor_borrow_on(const pp_device *device, void *data,
                              pp_dtype dtype, int64_t rank,
                              const int64_t *shape, pp_tensor **out);

/* Frees a tensor; NULL is ignored. */
void pp_tensor_destroy(pp_tensor *tensor);

pp_dtype pp_tensor_dtype(const pp_tensor *tensor);
int64_t pp_tensor_rank(const pp_tensor *tensor);
const int64_t *pp_tensor_shape(const pp_tensor *tensor);
int64_t pp_tensor_numel(const pp_tensor *tensor);
size_t pp_tensor_nbytes(const pp_tensor *tensor);
void *pp_tensor_data(pp_tensor *tensor);
/* The device the tensor's memory lives on (never NULL). */
const pp_device *pp_tensor_device(const pp_tensor *tensor);

/* Row-major single-precision GEMM:
 *   C[m x n] = alpha * op(A) * op(B) + beta * C
 * where op(A) is m x k (A stored k x m when trans_a) and op(B) is k x n
 * (B stored n x k when trans_b); lda, ldb, ldc are row strides in elements.
 * With beta == 0, C is overwritten and may hold anything. Runs on the engine
 * pp_set_gemm_engine chose, split into panels of C (a function of m, n, k)
 * on pp_set_threads' threads: the bits do not depend on the thread count. */
pp_status pp_gemm_f32(bool trans_a, bool trans_b, int64_t m, int64_t n,
                      int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc);

/* The GEMM engine of this process: "auto" (the default: per element type
 * and shape, the fastest engine measured on this machine, cached in
 * $PP_GEMM_CACHE or ~/.cache/pp), or "pp" (pp's own packed SGEMM),
 * "onednn", "openblas" or "blis" for every shape (a bf16 GEMM under "onednn"
 * runs oneDNN's bf16 kernel where the CPU allows; other bf16 and f16 GEMMs
 * widen their operands to f32 for the library's SGEMM).
 * PP_ERROR_INVALID_ARGUMENT for another name. */
pp_status pp_set_gemm_engine(const char *name);

/* The most threads pp_set_threads starts. */
#define PP_MAX_THREADS 1024

/* Threads the runtime's parallel loops use (GEMM panels); at least 1, the
 * default (a smaller count means 1). Results do not depend on it.
 * PP_ERROR_INVALID_ARGUMENT above PP_MAX_THREADS; PP_ERROR_INTERNAL when
 * the system cannot start them (the loops then run on the threads that
 * did start). */
pp_status pp_set_threads(int threads);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PP_RUNTIME_PP_RUNTIME_H */

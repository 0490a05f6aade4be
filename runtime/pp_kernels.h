/*===- pp_kernels.h - the ABI generated stage code calls ----------*- C -*-===*
 *
 * Generated stage functions (`void stageN_forward(pp_frame *)`) take their
 * arguments from a frame, call kernels, and hand results back to it:
 *
 * - pp_frame_arg borrows argument i; pp_frame_result takes ownership of
 *   result i; pp_frame_release destroys a tensor the code owns.
 * - pp_frame_gradient_sum lends the sum that gradient result i adds up in
 *   over a step, for a kernel to add the result into in place of making
 *   it (pp_<target>_gather_grad_add, pp_<target>_matmul_add,
 *   pp_<target>_linear_cross_entropy_grad_add);
 *   pp_frame_gradient_added then says that it did.
 * - pp_frame_send/pp_frame_recv move named tensors between stages.
 * - pp_frame_device is the device the function runs on, and
 *   pp_frame_queue_handle its queue (runtime/device/Queue.h): the
 *   cudaStream_t that CUDA kernels, the fused loops' included, launch on
 *   and allocate in the order of; NULL on the host.
 * - pp_frame_profile_begin(frame, kind, category)/pp_frame_profile_end(frame)
 *   bracket every kernel call and message: `kind` is the callee's name
 *   without its prefix ("matmul", "softmax_grad", "send", "recv"), a
 *   literal, and `category` what the compiler knows the call to be (a
 *   pp_profile_category). When the runtime profiles (pp-run --profile) the
 *   frame adds the bracket's wall time to `kind` and `category`; otherwise
 *   they only test a pointer.
 * - pp_cpu_<op> computes one nn op on host tensors and returns a new tensor
 *   the caller owns (runtime/cuda/pp_kernels_cuda.h has the pp_cuda_<op>
 *   twins for device tensors).
 *
 * A failing call records its error in the frame and returns NULL; every
 * call given a NULL tensor returns NULL, so the rest of the function runs
 * through and the runtime reports the first error after the call.
 * `reduction` is 0 (mean), 1 (sum) or 2 (none), as nn.LossReduction.
 *
 * Signatures follow the nn op's ODS definition (pp-lower-to-runtime derives
 * every call from it): the operands in order (an absent optional one is
 * NULL), then the inherent attributes sorted by name, as MLIR lists them
 * (I64Attr: int64_t, F64Attr: double, UnitAttr and enums: int,
 * DenseI64ArrayAttr: a count and a pointer); an op with several results
 * takes a trailing result_index and returns that result, or, when its
 * kernel makes them all at once (attention_grad), a trailing array it fills
 * in result order. An `axis` may be
 * negative (counted from the end). cast's `to` is a pp_dtype (nn.Dtype has
 * its values); gather's indices are i64 or i32, negative ones counting
 * from the end of the axis. An op whose only operand is variadic (concat)
 * takes its tensors as a count and an array. `constant` makes the tensors of
 * constants (host values in host memory; `count` is 1 for a splat);
 * `empty` a tensor whose elements the caller writes (the loops generated
 * for an nn.fusion make their results with it).
 * The gradients of binary ops (pow_grad,
 * maximum_grad, minimum_grad) take `operand` 0 (lhs) or 1 (rhs) and return
 * that operand's gradient in the broadcast shape.
 * dropout drops elements only in a training
 * call (the frame's position, runtime/kernels/Frame.h), keyed by its run
 * seed, step and first sample; otherwise it copies.
 *
 * The collectives (all_reduce, all_gather, reduce_scatter, shard_slice,
 * sharded_gather(_grad), sharded_cross_entropy(_grad): the pp ops of the
 * same names, without their mesh, which is the frame's) take their `axes`
 * as a key, the mesh axes' names in the IR's order joined by "," ("tp",
 * "dp,tp"), and run over the frame's group of those axes
 * (runtime/kernels/Frame.h: collectiveGroups), which every device of the
 * group calls with its own tensors; without such a group they fail the
 * frame. `reduction` is 0 (sum), 1 (max) or 2 (min), as
 * pp.ReductionKind. Every device gets the same bits: values are exchanged
 * and combined in group order, sums in double.
 *
 *===----------------------------------------------------------------------===*/

#ifndef PP_RUNTIME_PP_KERNELS_H
#define PP_RUNTIME_PP_KERNELS_H

#include "runtime/pp_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a generated stage function. Its body is a straight sequence of
 * runtime calls that optimizing does not speed up, while compilers take
 * time superlinear in its length to optimize it (GCC -O1 took over four
 * minutes on the stage functions of a 20,000-node chain, -O0 seconds): it
 * compiles unoptimized; the fused loops it calls are optimized. */
#if defined(__clang__)
#define PP_STAGE_FUNCTION __attribute__((optnone))
#elif defined(__GNUC__)
#define PP_STAGE_FUNCTION __attribute__((optimize("O0")))
#else
#define PP_STAGE_FUNCTION
#endif

/* The arguments, results and messages of one call of a stage function. */
typedef struct pp_frame pp_frame;

/* What a profile bracket's call is, as pp-lower-to-runtime classifies it
 * from the IR (runtime/kernels/ProfileCategory.h spells the names it
 * writes): the parts of pp-run --profile's breakdown. */
typedef enum pp_profile_category {
  /* A kernel or fused loop of none of the categories below. */
  PP_PROFILE_OTHER = 0,
  /* A matrix product (nn.matmul, nn.linear) outside attention. */
  PP_PROFILE_GEMM = 1,
  /* A kernel of attention, forward or backward (pp-mark-attention). */
  PP_PROFILE_ATTENTION = 2,
  /* A message (pp_frame_send, pp_frame_recv) or a collective kernel. */
  PP_PROFILE_COMMUNICATION = 3,
  /* How many categories there are. */
  PP_PROFILE_CATEGORIES = 4
} pp_profile_category;

pp_tensor *pp_frame_arg(pp_frame *frame, int64_t index);
/* Argument `index`, owned by the call from here on (it releases it or hands
 * it over, and may overwrite it): the caller's own tensor where the caller
 * gives it up (a saved value that no later call reads), else a copy. The
 * borrowed pointer pp_frame_arg gave is not used after. */
pp_tensor *pp_frame_take_arg(pp_frame *frame, int64_t index);
/* `tensor`, which the call owns and reads no more as it was, given `shape`
 * (as many elements): the same tensor and bytes, no copy. */
pp_tensor *pp_frame_reshape_owned(pp_frame *frame, pp_tensor *tensor,
                                  int64_t rank, const int64_t *shape);
void pp_frame_result(pp_frame *frame, pp_tensor *tensor, int64_t index);
void pp_frame_release(pp_frame *frame, pp_tensor *tensor);
/* The f32 tensor of `shape` that gradient result `index` adds into: the
 * step's sum of it (zeroed before its first contribution) where the caller
 * keeps sums, else a zeroed tensor of the call's own, which
 * pp_frame_gradient_added hands over as the result. Borrowed. */
pp_tensor *pp_frame_gradient_sum(pp_frame *frame, int64_t index, int64_t rank,
                                 const int64_t *shape);
/* Says that gradient result `index` has been added into its
 * pp_frame_gradient_sum. */
void pp_frame_gradient_added(pp_frame *frame, int64_t index);
void pp_frame_send(pp_frame *frame, pp_tensor *tensor, int64_t to_stage,
                   const char *name);
pp_tensor *pp_frame_recv(pp_frame *frame, int64_t from_stage, const char *name,
                         pp_dtype dtype, int64_t rank, const int64_t *shape);
const pp_device *pp_frame_device(pp_frame *frame);
void *pp_frame_queue_handle(pp_frame *frame);
void pp_frame_profile_begin(pp_frame *frame, const char *kind,
                            pp_profile_category category);
void pp_frame_profile_end(pp_frame *frame);

/* The kernels, declared once for every target prefix (pp_cpu_ here,
 * pp_cuda_ in runtime/cuda/pp_kernels_cuda.h). */
#define PP_DECLARE_KERNELS(prefix)                                             \
  pp_tensor *prefix##copy(pp_frame *frame, pp_tensor *input);                  \
  pp_tensor *prefix##constant(pp_frame *frame, pp_dtype dtype, int64_t rank,   \
                              const int64_t *shape, int64_t count,             \
                              const void *values);                             \
  pp_tensor *prefix##empty(pp_frame *frame, pp_dtype dtype, int64_t rank,      \
                           const int64_t *shape);                              \
  pp_tensor *prefix##matmul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs,   \
                            int transpose_lhs, int transpose_rhs);             \
  /* Adds matmul's product of 2-D f32 operands into `sum` (f32 of its          \
   * shape): one GEMM with beta 1, without making the product. */              \
  void prefix##matmul_add(pp_frame *frame, pp_tensor *sum, pp_tensor *lhs,     \
                          pp_tensor *rhs, int transpose_lhs,                   \
                          int transpose_rhs);                                  \
  pp_tensor *prefix##add(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs);     \
  /* nn.attention: softmax(mask(scale(query x key) + bias)) x value, one       \
   * head at a time (bias and mask may be NULL). */                            \
  pp_tensor *prefix##attention(                                                \
      pp_frame *frame, pp_tensor *query, pp_tensor *key, pp_tensor *value,     \
      pp_tensor *bias, pp_tensor *mask, int divide, double fill,               \
      int fill_where_true, double scale, int transpose_key);                   \
  /* nn.attention_grad: the query's, key's and value's gradients into          \
   * results[0..2] (all NULL when the call fails). */                          \
  void prefix##attention_grad(                                                 \
      pp_frame *frame, pp_tensor *grad, pp_tensor *query, pp_tensor *key,      \
      pp_tensor *value, pp_tensor *bias, pp_tensor *mask, int divide,          \
      double fill, int fill_where_true, double scale, int transpose_key,       \
      pp_tensor **results);                                                    \
  pp_tensor *prefix##sub(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs);     \
  pp_tensor *prefix##mul(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs);     \
  pp_tensor *prefix##div(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs);     \
  pp_tensor *prefix##neg(pp_frame *frame, pp_tensor *input);                   \
  pp_tensor *prefix##relu(pp_frame *frame, pp_tensor *input);                  \
  pp_tensor *prefix##sigmoid(pp_frame *frame, pp_tensor *input);               \
  pp_tensor *prefix##tanh(pp_frame *frame, pp_tensor *input);                  \
  pp_tensor *prefix##exp(pp_frame *frame, pp_tensor *input);                   \
  pp_tensor *prefix##softmax(pp_frame *frame, pp_tensor *input, int64_t axis); \
  pp_tensor *prefix##softmax_grad(pp_frame *frame, pp_tensor *grad,            \
                                  pp_tensor *result_value, int64_t axis);      \
  pp_tensor *prefix##log(pp_frame *frame, pp_tensor *input);                   \
  pp_tensor *prefix##sqrt(pp_frame *frame, pp_tensor *input);                  \
  pp_tensor *prefix##rsqrt(pp_frame *frame, pp_tensor *input);                 \
  pp_tensor *prefix##erf(pp_frame *frame, pp_tensor *input);                   \
  pp_tensor *prefix##sqrt_grad(pp_frame *frame, pp_tensor *grad,               \
                               pp_tensor *result);                             \
  pp_tensor *prefix##rsqrt_grad(pp_frame *frame, pp_tensor *grad,              \
                                pp_tensor *result);                            \
  pp_tensor *prefix##erf_grad(pp_frame *frame, pp_tensor *grad,                \
                              pp_tensor *input);                               \
  pp_tensor *prefix##gelu(pp_frame *frame, pp_tensor *input, int approximate); \
  pp_tensor *prefix##gelu_grad(pp_frame *frame, pp_tensor *grad,               \
                               pp_tensor *input, int approximate);             \
  pp_tensor *prefix##pow(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs);     \
  pp_tensor *prefix##maximum(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs); \
  pp_tensor *prefix##minimum(pp_frame *frame, pp_tensor *lhs, pp_tensor *rhs); \
  pp_tensor *prefix##pow_grad(pp_frame *frame, pp_tensor *grad,                \
                              pp_tensor *lhs, pp_tensor *rhs,                  \
                              int64_t operand);                                \
  pp_tensor *prefix##maximum_grad(pp_frame *frame, pp_tensor *grad,            \
                                  pp_tensor *lhs, pp_tensor *rhs,              \
                                  int64_t operand);                            \
  pp_tensor *prefix##minimum_grad(pp_frame *frame, pp_tensor *grad,            \
                                  pp_tensor *lhs, pp_tensor *rhs,              \
                                  int64_t operand);                            \
  pp_tensor *prefix##reduce_sum(pp_frame *frame, pp_tensor *input,             \
                                int64_t axes_count, const int64_t *axes,       \
                                int keep_dims);                                \
  pp_tensor *prefix##reduce_mean(pp_frame *frame, pp_tensor *input,            \
                                 int64_t axes_count, const int64_t *axes,      \
                                 int keep_dims);                               \
  pp_tensor *prefix##reduce_max(pp_frame *frame, pp_tensor *input,             \
                                int64_t axes_count, const int64_t *axes,       \
                                int keep_dims);                                \
  pp_tensor *prefix##reduce_sum_grad(pp_frame *frame, pp_tensor *grad,         \
                                     int64_t axes_count, const int64_t *axes,  \
                                     int64_t input_shape_count,                \
                                     const int64_t *input_shape);              \
  pp_tensor *prefix##reduce_max_grad(                                          \
      pp_frame *frame, pp_tensor *grad, pp_tensor *input,                      \
      pp_tensor *result_value, int64_t axes_count, const int64_t *axes);       \
  pp_tensor *prefix##log_softmax(pp_frame *frame, pp_tensor *input,            \
                                 int64_t axis);                                \
  pp_tensor *prefix##log_softmax_grad(pp_frame *frame, pp_tensor *grad,        \
                                      pp_tensor *result_value, int64_t axis);  \
  pp_tensor *prefix##layer_norm(pp_frame *frame, pp_tensor *input,             \
                                pp_tensor *weight, pp_tensor *bias,            \
                                int64_t axis, double epsilon);                 \
  pp_tensor *prefix##layer_norm_grad(                                          \
      pp_frame *frame, pp_tensor *grad, pp_tensor *input, pp_tensor *weight,   \
      int64_t axis, double epsilon, int64_t result_index);                     \
  pp_tensor *prefix##relu_grad(pp_frame *frame, pp_tensor *grad,               \
                               pp_tensor *input);                              \
  pp_tensor *prefix##sigmoid_grad(pp_frame *frame, pp_tensor *grad,            \
                                  pp_tensor *result);                          \
  pp_tensor *prefix##tanh_grad(pp_frame *frame, pp_tensor *grad,               \
                               pp_tensor *result);                             \
  pp_tensor *prefix##reshape(pp_frame *frame, pp_tensor *input, int64_t rank,  \
                             const int64_t *shape);                            \
  pp_tensor *prefix##sum_to(pp_frame *frame, pp_tensor *input, int64_t rank,   \
                            const int64_t *shape);                             \
  pp_tensor *prefix##split(pp_frame *frame, pp_tensor *input, int64_t axis,    \
                           int64_t num_sizes, const int64_t *sizes,            \
                           int64_t result_index);                              \
  pp_tensor *prefix##slice_grad(                                               \
      pp_frame *frame, pp_tensor *grad, int64_t input_shape_count,             \
      const int64_t *input_shape, int64_t limits_count, const int64_t *limits, \
      int64_t starts_count, const int64_t *starts, int64_t strides_count,      \
      const int64_t *strides);                                                 \
  pp_tensor *prefix##cast(pp_frame *frame, pp_tensor *input, int to);          \
  pp_tensor *prefix##where(pp_frame *frame, pp_tensor *condition,              \
                           pp_tensor *on_true, pp_tensor *on_false);           \
  pp_tensor *prefix##gather(pp_frame *frame, pp_tensor *data,                  \
                            pp_tensor *indices, int64_t axis);                 \
  pp_tensor *prefix##gather_grad(                                              \
      pp_frame *frame, pp_tensor *grad, pp_tensor *indices, int64_t axis,      \
      int64_t data_shape_count, const int64_t *data_shape);                    \
  /* Adds gather_grad's result into `sum` (f32 of data's shape): the same      \
   * bits as adding the result made on its own, without making it. */          \
  void prefix##gather_grad_add(pp_frame *frame, pp_tensor *sum,                \
                               pp_tensor *grad, pp_tensor *indices,            \
                               int64_t axis);                                  \
  pp_tensor *prefix##transpose(pp_frame *frame, pp_tensor *input,              \
                               int64_t permutation_count,                      \
                               const int64_t *permutation);                    \
  pp_tensor *prefix##slice(pp_frame *frame, pp_tensor *input,                  \
                           int64_t limits_count, const int64_t *limits,        \
                           int64_t starts_count, const int64_t *starts,        \
                           int64_t strides_count, const int64_t *strides);     \
  pp_tensor *prefix##concat(pp_frame *frame, int64_t inputs_count,             \
                            pp_tensor *const *inputs, int64_t axis);           \
  pp_tensor *prefix##broadcast_to(pp_frame *frame, pp_tensor *input,           \
                                  int64_t shape_count, const int64_t *shape);  \
  pp_tensor *prefix##trilu(pp_frame *frame, pp_tensor *input,                  \
                           int64_t diagonal, int upper);                       \
  pp_tensor *prefix##mse_loss(pp_frame *frame, pp_tensor *input,               \
                              pp_tensor *target, int reduction);               \
  pp_tensor *prefix##mse_loss_grad(pp_frame *frame, pp_tensor *grad,           \
                                   pp_tensor *input, pp_tensor *target,        \
                                   int reduction);                             \
  pp_tensor *prefix##cross_entropy(pp_frame *frame, pp_tensor *logits,         \
                                   pp_tensor *labels, int64_t ignore_index,    \
                                   int reduction);                             \
  pp_tensor *prefix##cross_entropy_grad(pp_frame *frame, pp_tensor *grad,      \
                                        pp_tensor *logits, pp_tensor *labels,  \
                                        int64_t ignore_index, int reduction);  \
  /* cross_entropy_grad's gradient written over `logits`, which the call       \
   * owns (pp_frame_take_arg), and returned: no logits-sized tensor made. */   \
  pp_tensor *prefix##cross_entropy_grad_in_place(                              \
      pp_frame *frame, pp_tensor *grad, pp_tensor *logits, pp_tensor *labels,  \
      int64_t ignore_index, int reduction);                                    \
  /* nn.linear_cross_entropy: cross_entropy(hidden x weight + bias, labels),   \
   * the logits made chunk_rows rows at a time (bias may be NULL). */          \
  pp_tensor *prefix##linear_cross_entropy(                                     \
      pp_frame *frame, pp_tensor *hidden, pp_tensor *weight,                   \
      pp_tensor *labels, pp_tensor *bias, int64_t chunk_rows,                  \
      int64_t ignore_index, int reduction, int transpose_weight);              \
  /* nn.linear_cross_entropy_grad: the hidden states', the weight's and,       \
   * with a bias, the bias's gradients into results[0..2] (all NULL when the   \
   * call fails). */                                                           \
  void prefix##linear_cross_entropy_grad(                                      \
      pp_frame *frame, pp_tensor *grad, pp_tensor *hidden, pp_tensor *weight,  \
      pp_tensor *labels, pp_tensor *bias, int64_t chunk_rows,                  \
      int64_t ignore_index, int reduction, int transpose_weight,               \
      pp_tensor **results);                                                    \
  /* nn.linear_cross_entropy_hidden_grad: the hidden states' gradient          \
   * alone. */                                                                 \
  pp_tensor *prefix##linear_cross_entropy_hidden_grad(                         \
      pp_frame *frame, pp_tensor *grad, pp_tensor *hidden, pp_tensor *weight,  \
      pp_tensor *labels, pp_tensor *bias, int64_t chunk_rows,                  \
      int64_t ignore_index, int reduction, int transpose_weight);              \
  /* linear_cross_entropy_grad with the weight's gradient added into `sum`     \
   * and the bias's into `bias_sum` (pp_frame_gradient_sum) instead of made;   \
   * returns the hidden states'. A NULL sum skips its gradient (a frozen       \
   * parameter, or no bias). */                                                \
  pp_tensor *prefix##linear_cross_entropy_grad_add(                            \
      pp_frame *frame, pp_tensor *sum, pp_tensor *bias_sum, pp_tensor *grad,   \
      pp_tensor *hidden, pp_tensor *weight, pp_tensor *labels,                 \
      pp_tensor *bias, int64_t chunk_rows, int64_t ignore_index,               \
      int reduction, int transpose_weight);                                    \
  pp_tensor *prefix##dropout(pp_frame *frame, pp_tensor *input, int64_t key,   \
                             double ratio);                                    \
  pp_tensor *prefix##all_reduce(pp_frame *frame, pp_tensor *input,             \
                                const char *axes, int reduction);              \
  pp_tensor *prefix##all_gather(pp_frame *frame, pp_tensor *input,             \
                                const char *axes, int64_t blocks,              \
                                int64_t dim);                                  \
  pp_tensor *prefix##reduce_scatter(pp_frame *frame, pp_tensor *input,         \
                                    const char *axes, int64_t blocks,          \
                                    int64_t dim, int reduction);               \
  pp_tensor *prefix##shard_slice(pp_frame *frame, pp_tensor *input,            \
                                 const char *axes, int64_t blocks,             \
                                 int64_t dim);                                 \
  pp_tensor *prefix##sharded_gather(pp_frame *frame, pp_tensor *data,          \
                                    pp_tensor *indices, const char *axes,      \
                                    int64_t axis);                             \
  pp_tensor *prefix##sharded_gather_grad(                                      \
      pp_frame *frame, pp_tensor *grad, pp_tensor *indices, const char *axes,  \
      int64_t axis, int64_t data_shape_count, const int64_t *data_shape);      \
  pp_tensor *prefix##sharded_cross_entropy(                                    \
      pp_frame *frame, pp_tensor *logits, pp_tensor *labels, const char *axes, \
      int64_t ignore_index);                                                   \
  pp_tensor *prefix##sharded_cross_entropy_grad(                               \
      pp_frame *frame, pp_tensor *grad, pp_tensor *logits, pp_tensor *labels,  \
      const char *axes, int64_t ignore_index);

/* Host kernels (OpenBLAS for matmul). */
PP_DECLARE_KERNELS(pp_cpu_)

/* Runs body(context, begin, end) over [0, count) items of `item_elements`
 * elements each, in chunks of about 16384 elements on the runtime's thread
 * pool (pp-run --threads), and returns when all have run: the host loops
 * generated for an nn.fusion call it with their rows. The chunks depend on
 * count and item_elements only, never on the thread count; `body` must not
 * throw. */
void pp_cpu_parallel_for(int64_t count, int64_t item_elements,
                         void (*body)(void *context, int64_t begin,
                                      int64_t end),
                         void *context);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PP_RUNTIME_PP_KERNELS_H */

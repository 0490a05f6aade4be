//===- MicrobatchSource.h - where a rank's microbatches come from -*- C++ -*-===//
//
// The trainer asks a source for the model inputs (on the first stage) and
// the labels (on the last stage) of each microbatch; middle stages never
// ask. A batch (a training step or an eval batch) is named by its start c:
// the position of its first sample in the source's order (a training step
// starts at the consumed-samples cursor, eval batch e at e * B).
// Microbatch k of the batch on data-parallel coordinate d is global
// microbatch k * D + d of the batch, so the samples of a batch do not
// depend on how it is split. Its first sample's position
// (BatchLayout::firstPosition) keys synthetic samples and dropout masks, so
// every mesh, and a run resumed at any cursor, draws them alike.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_MICROBATCHSOURCE_H
#define PP_RUNTIME_MICROBATCHSOURCE_H

#include "runtime/data/Sampler.h"
#include "runtime/package/Package.h"

#include <cstdint>

namespace pp::runtime {

class MicrobatchSource {
public:
  virtual ~MicrobatchSource() = default;

  /// Fills `tensor`, the model input `input` of microbatch `microbatch`
  /// of the batch starting at `batchStart`.
  virtual void fillInput(const TensorInfo &input, int64_t batchStart,
                         int64_t microbatch, pp_tensor *tensor) = 0;
  /// Fills `tensor` with the labels of microbatch `microbatch` of the
  /// batch starting at `batchStart`; positions the loss must skip hold the
  /// package's ignore_index.
  virtual void fillLabels(int64_t batchStart, int64_t microbatch,
                          pp_tensor *tensor) = 0;

  /// Elements (tokens, for a token dataset) this source has filled in.
  int64_t elementsRead() const { return elements; }

protected:
  int64_t elements = 0;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_MICROBATCHSOURCE_H

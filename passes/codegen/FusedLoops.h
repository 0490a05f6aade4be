//===- FusedLoops.h - the generated loop of an nn.fusion --------*- C++ -*-===//
//
// pp-lower-to-runtime turns each nn.fusion into one generated function that
// computes all its results in a single pass over the elements, calling the
// ops' per-element formulas (runtime/kernels/ElementwiseFormulas.h). This
// writes that function as C++ (a loop nest) or CUDA (a kernel, one thread
// per element, and its launcher).
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_CODEGEN_FUSEDLOOPS_H
#define PP_PASSES_CODEGEN_FUSEDLOOPS_H

#include "dialects/nn/IR/NNOps.h"

#include <string>

namespace pp {

/// The text of the arguments an op's attributes pass to its formula (and
/// kernel), as pp-lower-to-runtime derives them; failure after an error.
using AttributeArguments = llvm::function_ref<mlir::LogicalResult(
    mlir::Operation *, llvm::SmallVectorImpl<std::string> &)>;

/// The definition of `static void <name>(pp_frame *frame, pp_tensor
/// **inputs, pp_tensor **results)` computing `fusion` for `target` ("cpu"
/// or "cuda"): it reads the tensors of the fusion's inputs, in order, and
/// stores new tensors (pp_<target>_empty) for its results; all results are
/// null when an input is null (an earlier call failed) or on failure, with
/// the error recorded in the frame.
mlir::FailureOr<std::string> writeFusedLoop(nn::FusionOp fusion,
                                            llvm::StringRef name,
                                            llvm::StringRef target,
                                            AttributeArguments attributes);

} // namespace pp

#endif // PP_PASSES_CODEGEN_FUSEDLOOPS_H

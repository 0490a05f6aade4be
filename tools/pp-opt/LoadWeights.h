//===- LoadWeights.h - pp-opt --weights -------------------------*- C++ -*-===//
//
// `pp-opt MODEL --weights FILE` replaces the initial values (`pp.init`) of
// the imported model's parameters and constants with those of Hugging Face
// safetensors weights, matched by name as pp-run --weights matches them
// (runtime/checkpoints/PretrainedWeights.h), so that the package pp-opt
// emits starts from the pretrained weights.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TOOLS_PP_OPT_LOADWEIGHTS_H
#define PP_TOOLS_PP_OPT_LOADWEIGHTS_H

#include "runtime/checkpoints/PretrainedWeights.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace pp {

/// Sets the `pp.init` of each f32 argument of `module`'s @main that `path`
/// gives; emits an error naming every tensor that does not fit (and fails)
/// otherwise. Prints what it loaded to `log`.
mlir::LogicalResult loadWeights(mlir::ModuleOp module, const std::string &path,
                                const runtime::WeightsNaming &naming,
                                llvm::raw_ostream &log);

} // namespace pp

#endif // PP_TOOLS_PP_OPT_LOADWEIGHTS_H

//===- Passes.h - tensor-parallel passes ------------------------*- C++ -*-===//

#ifndef PP_PASSES_PARALLEL_PASSES_H
#define PP_PASSES_PARALLEL_PASSES_H

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace pp {
#define GEN_PASS_DECL
#include "passes/parallel/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/parallel/Passes.h.inc"
} // namespace pp

#endif // PP_PASSES_PARALLEL_PASSES_H

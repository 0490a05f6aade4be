//===- Passes.h - pipeline passes -------------------------------*- C++ -*-===//

#ifndef PP_PASSES_PIPELINE_PASSES_H
#define PP_PASSES_PIPELINE_PASSES_H

#include "dialects/pp/IR/PPDialect.h"
#include "passes/pipeline/CostModel.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace pp {
#define GEN_PASS_DECL
#include "passes/pipeline/Passes.h.inc"
#define GEN_PASS_REGISTRATION
#include "passes/pipeline/Passes.h.inc"
} // namespace pp

#endif // PP_PASSES_PIPELINE_PASSES_H

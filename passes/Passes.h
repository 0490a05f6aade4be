//===- Passes.h - every pp pass and pipeline --------------------*- C++ -*-===//

#ifndef PP_PASSES_PASSES_H
#define PP_PASSES_PASSES_H

#include "passes/codegen/Passes.h"
#include "passes/parallel/Passes.h"
#include "passes/pipeline/Passes.h"
#include "passes/training/Passes.h"

namespace pp {

/// Registers every pp pass and the `pp-compile` pipeline.
void registerPasses();

} // namespace pp

#endif // PP_PASSES_PASSES_H

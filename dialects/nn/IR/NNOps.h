//===- NNOps.h - nn dialect ops ---------------------------------*- C++ -*-===//
//
// Ops of the nn dialect; see NNOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_NNOPS_H
#define PP_DIALECTS_NN_IR_NNOPS_H

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/nn/IR/NNInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.h.inc"

namespace pp::nn {

/// The `key` of the `nn.dropout` a frontend imports from the node named
/// `nodeName`: a stable 64-bit hash, so that every dropout of a model draws
/// its own mask and the same model always draws the same ones.
uint64_t dropoutKey(llvm::StringRef nodeName);

} // namespace pp::nn

#endif // PP_DIALECTS_NN_IR_NNOPS_H

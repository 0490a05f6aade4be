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
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/nn/IR/NNOps.h.inc"

#endif // PP_DIALECTS_NN_IR_NNOPS_H

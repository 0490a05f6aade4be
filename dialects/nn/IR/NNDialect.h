//===- NNDialect.h - nn dialect declaration ---------------------*- C++ -*-===//
//
// The nn dialect: neural-network ops on ranked tensors.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_NNDIALECT_H
#define PP_DIALECTS_NN_IR_NNDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/nn/IR/NNDialect.h.inc"
#include "dialects/nn/IR/NNEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/IR/NNAttrs.h.inc"

#endif // PP_DIALECTS_NN_IR_NNDIALECT_H

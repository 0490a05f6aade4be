//===- NNDialect.cpp - nn dialect registration ------------------*- C++ -*-===//

#include "dialects/nn/IR/NNDialect.h"

#include "dialects/nn/IR/NNOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pp::nn;

#include "dialects/nn/IR/NNDialect.cpp.inc"
#include "dialects/nn/IR/NNEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/IR/NNAttrs.cpp.inc"

void NNDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/nn/IR/NNAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/nn/IR/NNOps.cpp.inc"
      >();
}

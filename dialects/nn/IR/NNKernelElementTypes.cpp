//===- NNKernelElementTypes.cpp - the element types kernels compute -------===//
//
// Which element types the runtime's kernels of an nn op take, as its traits
// declare (NNInterfaces.td): f32 by default, any for data movement, f32 with
// integer indices, and nn.cast's conversions.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

/// The element types nn.cast's kernels convert between.
bool castKernelTakes(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isF32() || element.isF64() || element.isInteger(1) ||
         element.isInteger(32) || element.isInteger(64);
}

/// The operand or result types of `op` as "tensor<3xi32>, tensor<3xi32>".
std::string describeTypes(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(types, os);
  return text;
}

} // namespace

std::string pp::nn::kernelElementTypeProblem(Operation *op) {
  if (op->hasTrait<KernelTakesAnyElementType>())
    return "";
  std::string name = op->getName().getStringRef().str();
  if (auto cast = dyn_cast<CastOp>(op)) {
    if (castKernelTakes(cast.getInput().getType()) &&
        castKernelTakes(cast.getType()))
      return "";
    return name + " from " + describeTypes(cast.getInput().getType()) +
           " to " + describeTypes(cast.getType()) +
           ": pp's cast kernels convert between f32, f64, i32, i64 and i1 "
           "only";
  }
  bool indices = op->hasTrait<KernelTakesIndices>();
  auto computable = [&](Type type, bool operand) {
    Type element = getElementTypeOrSelf(type);
    return element.isF32() || (indices && operand && element.isInteger());
  };
  bool ok = llvm::all_of(op->getOperandTypes(),
                         [&](Type type) { return computable(type, true); }) &&
            llvm::all_of(op->getResultTypes(),
                         [&](Type type) { return computable(type, false); });
  if (ok)
    return "";
  return name + " on " + describeTypes(op->getOperandTypes()) +
         ": pp's kernels compute it for f32 only" +
         (indices ? " (with integer indices)" : "");
}

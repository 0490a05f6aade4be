//===- NNKernelElementTypes.cpp - the element types kernels compute -------===//
//
// Which element types the runtime's kernels of an nn op take, as its traits
// declare (NNInterfaces.td): a float type (f32, bf16 or f16, the kernels
// written once over FloatElements.h's types) by default, any for data
// movement, a float type with integer indices; nn.cast's kernels convert
// between all of the types it takes (f32, bf16, f16, f64, i32, i64 and i1).
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/IR/NNOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

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
  // The cast kernels convert between every element type nn.cast takes.
  if (isa<CastOp>(op))
    return "";
  bool indices = op->hasTrait<KernelTakesIndices>();
  auto computable = [&](Type type, bool operand) {
    Type element = getElementTypeOrSelf(type);
    return element.isF32() || element.isBF16() || element.isF16() ||
           (indices && operand && element.isInteger());
  };
  bool ok = llvm::all_of(op->getOperandTypes(),
                         [&](Type type) { return computable(type, true); }) &&
            llvm::all_of(op->getResultTypes(),
                         [&](Type type) { return computable(type, false); });
  if (ok)
    return "";
  return name + " on " + describeTypes(op->getOperandTypes()) +
         ": pp's kernels compute it for f32, bf16 and f16 only" +
         (indices ? " (with integer indices)" : "");
}

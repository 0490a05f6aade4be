//===- NNInterfaces.h - what an nn op says about itself ---------*- C++ -*-===//
//
// The gradient interface and the runtime-kernel trait of nn ops; see
// NNInterfaces.td.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_NNINTERFACES_H
#define PP_DIALECTS_NN_IR_NNINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"

namespace pp::nn {

/// The runtime has a kernel `pp_<target>_<mnemonic>` for the op, whose
/// signature follows from the op's definition (pp-lower-to-runtime).
template <typename ConcreteType>
class HasRuntimeKernel
    : public mlir::OpTrait::TraitBase<ConcreteType, HasRuntimeKernel> {};

/// The elements of a statically shaped tensor type, 0 for anything else:
/// what cost estimates count.
double staticElementCount(mlir::Type type);

} // namespace pp::nn

#include "dialects/nn/IR/NNInterfaces.h.inc"

#endif // PP_DIALECTS_NN_IR_NNINTERFACES_H

//===- NNInterfaces.h - what an nn op says about itself ---------*- C++ -*-===//
//
// The gradient and sharding-rule interfaces and the runtime-kernel trait of
// nn ops; see NNInterfaces.td.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_NN_IR_NNINTERFACES_H
#define PP_DIALECTS_NN_IR_NNINTERFACES_H

#include "dialects/nn/IR/ShardingRule.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"

#include <string>

namespace pp::nn {

/// The runtime has a kernel `pp_<target>_<mnemonic>` for the op, whose
/// signature follows from the op's definition (pp-lower-to-runtime).
template <typename ConcreteType>
class HasRuntimeKernel
    : public mlir::OpTrait::TraitBase<ConcreteType, HasRuntimeKernel> {};

/// The kernels of a HasRuntimeKernel op take every element type the runtime
/// has (NN_KernelTakesAnyElementType).
template <typename ConcreteType>
class KernelTakesAnyElementType
    : public mlir::OpTrait::TraitBase<ConcreteType, KernelTakesAnyElementType> {
};

/// The kernels of a HasRuntimeKernel op compute a float type and take
/// integer index operands (NN_KernelTakesIndices).
template <typename ConcreteType>
class KernelTakesIndices
    : public mlir::OpTrait::TraitBase<ConcreteType, KernelTakesIndices> {};

/// The kernel of a HasRuntimeKernel op makes all of its results in one call
/// (NN_KernelMakesAllResults).
template <typename ConcreteType>
class KernelMakesAllResults
    : public mlir::OpTrait::TraitBase<ConcreteType, KernelMakesAllResults> {};

/// The op computes in f32 under a reduced precision (NN_ComputesInF32).
template <typename ConcreteType>
class ComputesInF32
    : public mlir::OpTrait::TraitBase<ConcreteType, ComputesInF32> {};

/// The op is an elementwise map with NumPy broadcasting whose per-element
/// formula is `pp::runtime::elementwise::<mnemonic>` (NN_Elementwise).
template <typename ConcreteType>
class Elementwise
    : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};

/// Why the runtime's kernels cannot compute `op` (a HasRuntimeKernel op) on
/// its element types, naming the op and its types; "" when they can. The
/// element types each op's kernels take come from its traits
/// (NNInterfaces.td).
std::string kernelElementTypeProblem(mlir::Operation *op);

/// The elements of a statically shaped tensor type, 0 for anything else:
/// what cost estimates count.
double staticElementCount(mlir::Type type);

} // namespace pp::nn

#include "dialects/nn/IR/NNInterfaces.h.inc"

#endif // PP_DIALECTS_NN_IR_NNINTERFACES_H

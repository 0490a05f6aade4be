//===- PPOps.h - pp dialect ops ---------------------------------*- C++ -*-===//
//
// Ops of the pp dialect; see PPOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_PP_IR_PPOPS_H
#define PP_DIALECTS_PP_IR_PPOPS_H

#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace pp {

/// The runtime has a kernel `pp_<target>_<mnemonic>` for the collective, run
/// over the calling frame's group (PP_CollectiveKernel).
template <typename ConcreteType>
class CollectiveKernel
    : public mlir::OpTrait::TraitBase<ConcreteType, CollectiveKernel> {};

} // namespace pp

#define GET_OP_CLASSES
#include "dialects/pp/IR/PPOps.h.inc"

#endif // PP_DIALECTS_PP_IR_PPOPS_H

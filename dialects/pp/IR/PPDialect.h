//===- PPDialect.h - pp dialect declaration ---------------------*- C++ -*-===//
//
// The pp dialect: device meshes, pipeline stages, transfers and collectives.
//
//===----------------------------------------------------------------------===//

#ifndef PP_DIALECTS_PP_IR_PPDIALECT_H
#define PP_DIALECTS_PP_IR_PPDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/pp/IR/PPDialect.h.inc"
#include "dialects/pp/IR/PPEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/pp/IR/PPAttrs.h.inc"

namespace pp {

/// The resource that pipeline sends, receives and collectives touch, so that
/// they keep their order and are never removed as dead code.
struct PipelineChannelResource
    : public mlir::SideEffects::Resource::Base<PipelineChannelResource> {
  llvm::StringRef getName() override { return "pp.channel"; }
};

/// Discardable attribute names the dialect verifies on function arguments and
/// results.
constexpr llvm::StringLiteral kShardingAttrName = "pp.sharding";
constexpr llvm::StringLiteral kPlacementAttrName = "pp.placement";

} // namespace pp

#endif // PP_DIALECTS_PP_IR_PPDIALECT_H

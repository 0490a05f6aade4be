//===- HoistParameterCasts.cpp - pp-hoist-parameter-casts -----------------===//
//
// Under a reduced precision each node casts the f32 master of a weight it
// reads to the compute type (pp-apply-precision), and the backward casts it
// again (pp-recompute-parameter-casts). Inside a stage function these casts
// run once per call, i.e. per microbatch in each phase. This pass makes the
// compute-type copy an argument of the stage function (role
// "compute_copy", named after its master), which the runtime converts once
// per step (docs/precision.md, "Compute copies").
//
//===----------------------------------------------------------------------===//

#include "passes/ProgramUtils.h"
#include "passes/codegen/Passes.h"

#include "dialects/nn/IR/NNOps.h"
#include "dialects/pp/IR/PPDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"

namespace pp {
#define GEN_PASS_DEF_HOISTPARAMETERCASTS
#include "passes/codegen/Passes.h.inc"
} // namespace pp

using namespace mlir;
using namespace pp;

namespace {

/// Replaces the casts of `function`'s parameter argument `index` by one new
/// argument per target type, inserted after it; returns how many it
/// inserted.
FailureOr<unsigned> hoistCastsOf(func::FuncOp function, unsigned index) {
  BlockArgument master = function.getArgument(index);
  llvm::MapVector<Type, SmallVector<nn::CastOp>> castsByType;
  for (Operation *user : master.getUsers())
    if (auto castOp = dyn_cast<nn::CastOp>(user))
      castsByType[castOp.getType()].push_back(castOp);
  DictionaryAttr attrs = getNameAndRoleAttrs(
      function.getContext(), argumentName(function, index), kRoleComputeCopy);
  unsigned inserted = 0;
  for (auto &[type, casts] : castsByType) {
    unsigned at = index + 1 + inserted;
    if (failed(function.insertArgument(at, type, attrs, master.getLoc())))
      return failure();
    for (nn::CastOp castOp : casts) {
      castOp.getResult().replaceAllUsesWith(function.getArgument(at));
      castOp.erase();
    }
    ++inserted;
  }
  return inserted;
}

struct HoistParameterCastsPass
    : public pp::impl::HoistParameterCastsBase<HoistParameterCastsPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (!function->hasAttr(kStageAttrName) || function.isExternal())
        continue;
      for (unsigned index = 0; index < function.getNumArguments(); ++index) {
        if (!isModelParameter(function, index))
          continue;
        FailureOr<unsigned> inserted = hoistCastsOf(function, index);
        if (failed(inserted))
          return signalPassFailure();
        index += *inserted;
      }
    }
  }
};

} // namespace

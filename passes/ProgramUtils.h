//===- ProgramUtils.h - the program the passes transform --------*- C++ -*-===//
//
// Accessors for the whole-program form the pipeline passes share: one
// `func.func @main` whose arguments, results and ops carry the attributes
// named in dialects/pp/IR/PPDialect.h.
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_PROGRAMUTILS_H
#define PP_PASSES_PROGRAMUTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace pp {

/// The program `@main` of `module`, or failure after saying it is missing.
mlir::FailureOr<mlir::func::FuncOp> getProgram(mlir::ModuleOp module);

/// Fails, saying why, when an op of `function`'s body has regions: the
/// passes before pp-partition treat the program as one flat block of ops.
mlir::LogicalResult checkFlatProgram(mlir::func::FuncOp function);

/// The `pp.role` of argument `index` of `function` ("" when it has none).
llvm::StringRef argumentRole(mlir::func::FuncOp function, unsigned index);
/// The `pp.name` of argument `index` of `function` ("" when it has none).
llvm::StringRef argumentName(mlir::func::FuncOp function, unsigned index);

/// True when argument `index` of `function` is one of the model's weights:
/// a trainable, frozen or constant parameter.
bool isModelParameter(mlir::func::FuncOp function, unsigned index);
/// The values of `function`'s flat body computed from the arguments for
/// which `seed(argument number)` holds, those arguments included.
llvm::DenseSet<mlir::Value>
valuesDerivedFrom(mlir::func::FuncOp function,
                  llvm::function_ref<bool(unsigned)> seed);

/// The stage pp-partition placed parameter argument `index` on (0 before).
int64_t getParameterStage(mlir::func::FuncOp function, unsigned index);

/// Fails, saying which and how to fix it, unless every input of `main`
/// (and result `output`, when given) has `size` rows (dimension 0); a
/// `size` of 0 checks nothing.
mlir::LogicalResult checkBatchDimension(mlir::func::FuncOp main, int64_t size,
                                        std::optional<unsigned> output);

/// `base`, or `base_1`, `base_2`, ... when an argument of `function` already
/// has that name.
std::string uniqueArgumentName(mlir::func::FuncOp function,
                               llvm::StringRef base);

/// The model node `op` implements, or null.
mlir::StringAttr getNode(mlir::Operation *op);
/// True when `op` belongs to the backward computation.
bool isBackward(mlir::Operation *op);
/// Marks `op` as part of the backward computation.
void setBackward(mlir::Operation *op);
/// The stage `op` runs on, when assigned.
std::optional<int64_t> getStage(mlir::Operation *op);

} // namespace pp

#endif // PP_PASSES_PROGRAMUTILS_H

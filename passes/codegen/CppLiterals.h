//===- CppLiterals.h - numbers as C++ expressions --------------*- C++ -*-===//
//
// The generated C++ spells numbers from the IR exactly: the runtime calls'
// attribute arguments and constants (LowerToRuntime.cpp) and the constants
// a fused loop folds in (FusedLoops.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PP_PASSES_CODEGEN_CPPLITERALS_H
#define PP_PASSES_CODEGEN_CPPLITERALS_H

#include <string>

namespace pp {

/// A C++ expression of `value` as a `double`, or as a `float` when
/// `single`: exact hexadecimal for finite values, std::numeric_limits for
/// infinities and NaN (which have no literal).
std::string floatingLiteral(double value, bool single);

} // namespace pp

#endif // PP_PASSES_CODEGEN_CPPLITERALS_H

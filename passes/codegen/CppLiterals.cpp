//===- CppLiterals.cpp - numbers as C++ expressions -----------------------===//

#include "passes/codegen/CppLiterals.h"

#include <cmath>
#include <cstdio>

std::string pp::floatingLiteral(double value, bool single) {
  std::string limits = std::string("std::numeric_limits<") +
                       (single ? "float" : "double") + ">::";
  if (std::isnan(value))
    return limits + "quiet_NaN()";
  if (std::isinf(value))
    return (value < 0 ? "-" : "") + limits + "infinity()";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%a", value);
  return buffer + std::string(single ? "f" : "");
}

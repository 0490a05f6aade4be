//===- Error.cpp - runtime error reporting ----------------------*- C++ -*-===//

#include "runtime/core/Error.h"

namespace {
thread_local std::string lastError;
} // namespace

pp_status pp::runtime::fail(pp_status status, const std::string &message) {
  lastError = message;
  return status;
}

extern "C" const char *pp_last_error(void) { return lastError.c_str(); }

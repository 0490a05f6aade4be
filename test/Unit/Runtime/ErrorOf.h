//===- ErrorOf.h - the message a call throws, for tests ---------*- C++ -*-===//

#ifndef PP_TEST_UNIT_RUNTIME_ERROROF_H
#define PP_TEST_UNIT_RUNTIME_ERROROF_H

#include <stdexcept>
#include <string>

/// The message of the std::runtime_error `call` throws, or "no error".
template <typename Call> std::string errorOf(Call call) {
  try {
    call();
  } catch (const std::runtime_error &error) {
    return error.what();
  }
  return "no error";
}

#endif // PP_TEST_UNIT_RUNTIME_ERROROF_H

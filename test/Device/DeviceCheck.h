//===- DeviceCheck.h - PASS or FAIL lines of the GPU check programs -*- C++ -*-===//

#ifndef PP_TEST_DEVICE_DEVICECHECK_H
#define PP_TEST_DEVICE_DEVICECHECK_H

#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

namespace pp::runtime::testing {

/// How many checks of this program failed so far.
inline int &failedChecks() {
  static int failures = 0;
  return failures;
}

/// Prints PASS or FAIL for `name`: `check` returns "" or why it failed (a
/// throw fails it too).
inline void expect(const std::string &name,
                   const std::function<std::string()> &check) {
  std::string why;
  try {
    why = check();
  } catch (const std::exception &error) {
    why = std::string("threw: ") + error.what();
  }
  failedChecks() += !why.empty();
  std::printf("%s %s%s%s\n", why.empty() ? "PASS" : "FAIL", name.c_str(),
              why.empty() ? "" : ": ", why.c_str());
}

/// Whether the machine has a GPU; false, after saying so, without one.
inline bool gpuPresent() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0)
    return true;
  std::fprintf(stderr, "no usable GPU\n");
  return false;
}

} // namespace pp::runtime::testing

#endif // PP_TEST_DEVICE_DEVICECHECK_H

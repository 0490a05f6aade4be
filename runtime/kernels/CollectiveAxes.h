//===- CollectiveAxes.h - how a collective names its mesh axes --*- C++ -*-===//
//
// The contract between pp-lower-to-runtime, which passes a collective's
// mesh axes to its kernel, and the frame, which holds the groups the
// kernels run over by those axes (pp_frame::collectiveGroups).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_KERNELS_COLLECTIVEAXES_H
#define PP_RUNTIME_KERNELS_COLLECTIVEAXES_H

#include <string>
#include <vector>

namespace pp::runtime {

/// The key of a collective over the mesh axes `names`: the names, in the
/// order the IR lists them, joined by "," ("tp", "dp,tp").
inline std::string collectiveAxesKey(const std::vector<std::string> &names) {
  std::string key;
  for (const std::string &name : names)
    key += (key.empty() ? "" : ",") + name;
  return key;
}

} // namespace pp::runtime

#endif // PP_RUNTIME_KERNELS_COLLECTIVEAXES_H

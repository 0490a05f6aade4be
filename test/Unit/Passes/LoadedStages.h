//===- LoadedStages.h - stage functions compiled and loaded -----*- C++ -*-===//
//
// The stage functions of a module, run through the real code generator
// (pp-lower-to-runtime, the C++ emitter, the host compiler) into a library
// of the runtime's CPU kernels and loaded into the test.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TEST_UNIT_PASSES_LOADEDSTAGES_H
#define PP_TEST_UNIT_PASSES_LOADEDSTAGES_H

#include "runtime/kernels/Frame.h"
#include "runtime/pp_kernels.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <vector>

struct TensorDeleter {
  void operator()(pp_tensor *tensor) const { pp_tensor_destroy(tensor); }
};
using Tensor = std::unique_ptr<pp_tensor, TensorDeleter>;

using StageEntry = void (*)(pp_frame *);

class LoadedStages {
public:
  /// Compiles and loads the functions of `module` that carry pp.stage;
  /// check error() afterwards.
  explicit LoadedStages(mlir::ModuleOp module);
  ~LoadedStages();
  LoadedStages(const LoadedStages &) = delete;
  LoadedStages &operator=(const LoadedStages &) = delete;

  /// What went wrong, or "".
  const std::string &error() const { return problem; }
  /// The stage function `symbol`, or null.
  StageEntry entry(const std::string &symbol) const;

private:
  std::string directory, problem;
  void *handle = nullptr;
};

/// Calls `entry` on `args` (borrowed) in a frame at `position` and takes
/// its results; an error the call records fails the test.
std::vector<Tensor> callStage(StageEntry entry,
                              const std::vector<pp_tensor *> &args,
                              const pp::runtime::RunPosition &position = {});

#endif // PP_TEST_UNIT_PASSES_LOADEDSTAGES_H

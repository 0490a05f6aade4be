//===- StageCompiler.h - generated stage code to a library ------*- C++ -*-===//
//
// A package carries the generated source of its stage functions for each
// target (stages.cpp for the CPU, stages.cu for CUDA); a stage library is
// that source compiled and linked against the runtime. pp-opt compiles the
// CPU library when it emits a package; a CUDA library is compiled when a
// run first needs it (StageLibraryCache.h), so that CPU work never runs
// nvcc. Both use the one compiler command defined here.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_PACKAGE_STAGECOMPILER_H
#define PP_RUNTIME_PACKAGE_STAGECOMPILER_H

#include <optional>
#include <string>

namespace pp::runtime {

/// What stage functions are compiled for.
enum class StageTarget { Cpu, Cuda };

/// A target's name ("cpu", "cuda": the manifest's `libraries` key and
/// the prefix of its kernels), its source file and its library file.
struct StageTargetFiles {
  const char *name;
  const char *source;
  const char *library;
};

/// The files of `target`: stages.cpp and libstages.so, or stages.cu and
/// libstages_cuda.so.
const StageTargetFiles &stageTargetFiles(StageTarget target);

/// The target named `name` ("cpu" or "cuda"), or nullopt.
std::optional<StageTarget> parseStageTarget(const std::string &name);

/// True when this build can compile `target` code (CMake found the CUDA
/// compiler for Cuda).
bool canCompileStages(StageTarget target);

/// Compiles the generated `source` for `target` into the shared library
/// `library`, linked against the runtime; the compiler's output goes to
/// the file `log`. Returns "" on success, else what went wrong.
std::string compileStageLibrary(StageTarget target, const std::string &source,
                                const std::string &library,
                                const std::string &log);

/// What a library compiled for `target` depends on besides its source: the
/// compiler, its options and the runtime library it links (their paths, sizes
/// and modification times). A rebuilt pp or another compiler changes it.
std::string stageCompilerIdentity(StageTarget target);

} // namespace pp::runtime

#endif // PP_RUNTIME_PACKAGE_STAGECOMPILER_H

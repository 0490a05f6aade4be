//===- StageCompiler.cpp - generated stage code to a library --------------===//

#include "runtime/package/StageCompiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

extern char **environ;

namespace pp::runtime {

namespace {

constexpr StageTargetFiles kCpuFiles = {"cpu", "stages.cpp", "libstages.so"};
constexpr StageTargetFiles kCudaFiles = {"cuda", "stages.cu",
                                         "libstages_cuda.so"};

/// The compiler of `target`'s code: c++ (found on PATH) or the nvcc CMake
/// found.
std::string compilerOf(StageTarget target) {
#ifdef PP_NVCC
  if (target == StageTarget::Cuda)
    return PP_NVCC;
#endif
  return target == StageTarget::Cpu ? "c++" : "";
}

/// The runtime library code compiled for `target` links.
std::string runtimeLibraryOf(StageTarget target) {
  return std::string(PP_LIBRARY_DIR) +
         (target == StageTarget::Cpu ? "/libPPRuntime.so"
                                     : "/libPPRuntimeCuda.so");
}

/// The code generation options for `target`: no floating-point contraction,
/// as the runtime's kernels, so that fused loops (nn.fusion) round every
/// operation to f32 as the kernels do. On the CPU, -O3: GCC's -O2 vectorizes
/// with a "very cheap" cost model that refuses any loop whose pointers need
/// a run-time overlap check, i.e. every fused loop (the GELU loop of a GPT
/// ran 9 ns per element, 0.3 with AVX-512), and -O3's dynamic model is the
/// one spelling GCC and Clang both take. An elementwise loop gives the same
/// bits either way (no reduction is reassociated), and sqrt without errno
/// is one instruction with the same bits. (Stage functions themselves
/// compile unoptimized: PP_STAGE_FUNCTION.)
std::vector<std::string> optionsFor(StageTarget target) {
  if (target == StageTarget::Cpu)
    return {"-std=c++17",        "-O3",   "-fno-math-errno",
            "-ffp-contract=off", "-fPIC", "-shared"};
  return {"-std=c++17",
          "-O2",
          "-fmad=false",
          "-Xcompiler",
          "-fPIC,-ffp-contract=off",
          "-shared"};
}

/// The compiler command that builds `library` from `source` for `target`.
std::vector<std::string> commandFor(StageTarget target,
                                    const std::string &source,
                                    const std::string &library) {
  std::vector<std::string> args = optionsFor(target);
  args.insert(args.begin(), compilerOf(target));
  args.insert(args.end(),
              {"-I" PP_SOURCE_DIR, source, "-o", library, "-L" PP_LIBRARY_DIR,
               target == StageTarget::Cpu ? "-lPPRuntime" : "-lPPRuntimeCuda",
               target == StageTarget::Cpu ? "-Wl,-rpath," PP_LIBRARY_DIR
                                          : "-Xlinker=-rpath," PP_LIBRARY_DIR});
  return args;
}

/// "PATH:SIZE:MTIME" of the file `path`, or "PATH:missing".
std::string fileStamp(const std::string &path) {
  struct stat status;
  if (::stat(path.c_str(), &status) != 0)
    return path + ":missing";
  return path + ":" + std::to_string(status.st_size) + ":" +
         std::to_string(status.st_mtim.tv_sec) + "." +
         std::to_string(status.st_mtim.tv_nsec);
}

} // namespace

const StageTargetFiles &stageTargetFiles(StageTarget target) {
  return target == StageTarget::Cpu ? kCpuFiles : kCudaFiles;
}

std::optional<StageTarget> parseStageTarget(const std::string &name) {
  for (StageTarget target : {StageTarget::Cpu, StageTarget::Cuda})
    if (name == stageTargetFiles(target).name)
      return target;
  return std::nullopt;
}

bool canCompileStages(StageTarget target) {
  return !compilerOf(target).empty();
}

std::string compileStageLibrary(StageTarget target, const std::string &source,
                                const std::string &library,
                                const std::string &log) {
  const char *name = stageTargetFiles(target).name;
  if (!canCompileStages(target))
    return std::string("this pp was built without a compiler for ") + name +
           " code (CMake found no CUDA toolkit)";
  std::vector<std::string> args = commandFor(target, source, library);
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t child = 0;
  int failure =
      ::posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (failure != 0)
    return "cannot run the " + std::string(name) + " compiler '" + args[0] +
           "': " + std::strerror(failure) +
           (target == StageTarget::Cpu ? " (install a C++ compiler as c++)"
                                       : "");
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return std::string("cannot wait for the compiler: ") +
             std::strerror(errno);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return "";
  std::string how = WIFEXITED(status)
                        ? "exit " + std::to_string(WEXITSTATUS(status))
                        : "signal " + std::to_string(WTERMSIG(status));
  return "compiling the generated " + std::string(name) + " code failed (" +
         how + "); see " + log;
}

std::string stageCompilerIdentity(StageTarget target) {
  std::string identity =
      std::string(stageTargetFiles(target).name) + "\n" + compilerOf(target);
  for (const std::string &option : optionsFor(target))
    identity += " " + option;
  return identity + "\n" + fileStamp(runtimeLibraryOf(target));
}

} // namespace pp::runtime

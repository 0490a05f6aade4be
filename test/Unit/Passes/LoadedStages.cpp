//===- LoadedStages.cpp - stage functions compiled and loaded -------------===//

#include "LoadedStages.h"

#include "passes/codegen/StageLibrary.h"
#include "runtime/package/StageCompiler.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

LoadedStages::LoadedStages(mlir::ModuleOp module) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("pp-loaded-stages", dir)) {
    problem = "cannot create a temporary folder";
    return;
  }
  directory = dir.str().str();
  std::string source = directory + "/stages.cpp";
  std::string library = directory + "/libstages.so";
  std::error_code ec;
  llvm::raw_fd_ostream os(source, ec);
  if (ec || mlir::failed(pp::writeStageSource(module, "cpu", os))) {
    problem = "cannot generate the stages' code";
    return;
  }
  os.close();
  problem = pp::runtime::compileStageLibrary(pp::runtime::StageTarget::Cpu,
                                             source, library,
                                             directory + "/compile.log");
  if (!problem.empty())
    return;
  handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    problem = std::string("cannot load the stages: ") + ::dlerror();
}

LoadedStages::~LoadedStages() {
  if (handle)
    ::dlclose(handle);
  if (!directory.empty())
    llvm::sys::fs::remove_directories(directory);
}

StageEntry LoadedStages::entry(const std::string &symbol) const {
  return handle ? reinterpret_cast<StageEntry>(::dlsym(handle, symbol.c_str()))
                : nullptr;
}

std::vector<Tensor> callStage(StageEntry entry,
                              const std::vector<pp_tensor *> &args,
                              const pp::runtime::RunPosition &position) {
  pp_frame frame;
  frame.args = args;
  frame.position = position;
  entry(&frame);
  EXPECT_TRUE(frame.error.empty()) << frame.error;
  std::vector<Tensor> results;
  for (pp_tensor *&result : frame.results) {
    results.emplace_back(result);
    result = nullptr;
  }
  return results;
}

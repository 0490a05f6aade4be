//===- pp-run.cpp - runs compiled pipelines ---------------------*- C++ -*-===//
//
// Launches the ranks of a compiled pipeline package (or of a model it
// compiles first) and trains it. This revision parses and checks the whole
// command line and the package path; executing packages arrives with the
// first end-to-end pipeline (see docs/tools/pp-run.md).
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

enum class Schedule { GPipe, OneFOneB };
enum class DataSource { Synthetic };

cl::OptionCategory runCategory("pp-run options");

cl::opt<std::string> input(cl::Positional, cl::Required,
                           cl::desc("<package-dir | model.onnx>"),
                           cl::cat(runCategory));
cl::opt<unsigned> numProcesses(
    "nproc", cl::init(0),
    cl::desc("Rank processes to launch on this machine (default: one per "
             "stage)"),
    cl::cat(runCategory));
cl::opt<Schedule>
    schedule("schedule", cl::init(Schedule::OneFOneB),
             cl::desc("Pipeline schedule"),
             cl::values(clEnumValN(Schedule::GPipe, "gpipe",
                                   "all forwards, then all backwards"),
                        clEnumValN(Schedule::OneFOneB, "1f1b",
                                   "one forward, one backward (default)")),
             cl::cat(runCategory));
cl::opt<int> microbatches("microbatches", cl::init(1),
                          cl::desc("Microbatches per step (>= 1)"),
                          cl::cat(runCategory));
cl::opt<int> steps("steps", cl::init(1),
                   cl::desc("Training steps to run (>= 1)"),
                   cl::cat(runCategory));
cl::opt<DataSource>
    data("data", cl::init(DataSource::Synthetic), cl::desc("Training data"),
         cl::values(clEnumValN(DataSource::Synthetic, "synthetic",
                               "deterministic random samples keyed by "
                               "(seed, sample index)")),
         cl::cat(runCategory));
cl::opt<uint64_t> seed("seed", cl::init(0),
                       cl::desc("Seed of data and initialization"),
                       cl::cat(runCategory));
cl::opt<std::string>
    metricsPath("metrics",
                cl::desc("Write one JSON object per step to this file"),
                cl::value_desc("file"), cl::cat(runCategory));
cl::opt<int> stages("stages", cl::init(0),
                    cl::desc("Pipeline stages when compiling a model"),
                    cl::cat(runCategory));
cl::opt<int> microbatchSize("microbatch-size", cl::init(0),
                            cl::desc("Samples per microbatch when compiling "
                                     "a model"),
                            cl::cat(runCategory));
cl::opt<std::string> loss("loss",
                          cl::desc("Loss when compiling a model, "
                                   "KIND:OUTPUT with KIND mse or "
                                   "cross_entropy"),
                          cl::value_desc("kind:output"), cl::cat(runCategory));

/// Prints `message` as an error and returns the failing exit code.
int error(const Twine &message) {
  WithColor::error(errs(), "pp-run") << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pp-run: trains a compiled pipeline, one process per rank\n\n"
      "  pp-run PACKAGE_DIR --nproc N --schedule gpipe|1f1b --microbatches M\n"
      "         --steps S --data synthetic --seed K --metrics FILE\n");

  if (microbatches < 1)
    return error("--microbatches must be at least 1, got " +
                 Twine(microbatches.getValue()));
  if (steps < 1)
    return error("--steps must be at least 1, got " + Twine(steps.getValue()));
  if (!sys::fs::exists(input))
    return error("no such package directory or model file: '" + input + "'");
  if (!sys::fs::is_directory(input))
    return error("'" + input +
                 "' is a model file; compiling models in "
                 "pp-run is not available in this build, compile it with "
                 "pp-opt first");
  SmallString<256> manifest(input.getValue());
  sys::path::append(manifest, "manifest.json");
  if (!sys::fs::exists(manifest))
    return error("'" + input +
                 "' is not a pipeline package: it has no "
                 "manifest.json (pp-opt --pp-emit=DIR writes packages)");
  return error("cannot run package '" + input +
               "': this build of pp-run "
               "does not execute pipeline packages yet");
}

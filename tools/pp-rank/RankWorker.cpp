//===- RankWorker.cpp - runs one rank of a job ----------------------------===//

#include "tools/pp-rank/RankWorker.h"

#include "tools/pp-rank/CudaBackendPlugin.h"
#include "tools/pp-rank/InferenceInputs.h"
#include "tools/pp-rank/RankEnvironment.h"
#include "tools/pp-rank/RankReport.h"
#include "tools/pp-rank/TensorFiles.h"

#include "runtime/package/StageLibraryCache.h"
#include "runtime/pp_runtime.h"
#include "runtime/training/Backend.h"
#include "runtime/training/PackageAgreement.h"
#include "runtime/training/Trainer.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>

using namespace pp::runtime;

namespace {

/// Rank `world.rank()`'s part of a forward-only run; rank 0 writes the
/// outputs.
void runInference(const JobDescription &job, Package &package,
                  Communicator &world, RankGroups &groups, Backend &backend) {
  const InferenceJob &inference = *job.inference;
  auto [inputs, microbatches] = loadInferenceInputs(package, inference);
  std::vector<pp_tensor *> raw;
  for (TensorPtr &input : inputs)
    raw.push_back(input.get());
  std::vector<TensorPtr> outputs =
      infer(package, world, groups, backend, raw, microbatches,
            job.trainer.weights);
  if (world.rank() != 0)
    return;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string path =
        inference.outputsDir + "/output_" + std::to_string(i) + ".pb";
    writeTensorFile(path, package.outputs[i].tensor.name, outputs[i].get());
    std::cout << "output " << i << " '" << package.outputs[i].tensor.name
              << "' " << formatShape(shapeOf(outputs[i].get())) << " "
              << pp_dtype_name(pp_tensor_dtype(outputs[i].get())) << " -> "
              << path << std::endl;
  }
}

/// The backend `job.device` asks for; its messages go over the pipeline
/// group (whose ranks are the stages).
std::unique_ptr<Backend> createBackend(const JobDescription &job,
                                       RankGroups &groups) {
  Communicator &pipeline = *groups.pipeline;
  if (job.device == "cpu")
    return createCpuBackend(pipeline);
  std::string problem;
  int localRank =
      environmentInt("LOCAL_RANK", problem).value_or(pipeline.rank());
  int localRanks = environmentInt("LOCAL_WORLD_SIZE", problem).value_or(1);
  return loadCudaBackend({pipeline, *groups.tensorParallel,
                          *groups.collectives, localRank, localRanks});
}

/// The threads of this rank: the job's, else the CPUs divided among the
/// job's ranks on this machine (LOCAL_WORLD_SIZE).
int rankThreads(const JobDescription &job) {
  std::string problem;
  int localRanks = environmentInt("LOCAL_WORLD_SIZE", problem).value_or(1);
  if (!problem.empty())
    throw std::runtime_error(problem + "; it counts the job's ranks on this "
                             "machine (or give --threads)");
  return threadsAmong(job.threads, localRanks);
}

/// Job rank 0 writes the outputs: finds out before the run that it cannot.
void checkOutputs(const JobDescription &job) {
  if (std::string problem = jobOutputsProblem(job); !problem.empty())
    throw std::runtime_error(problem);
  if (!job.inference)
    return;
  std::error_code failure;
  std::filesystem::create_directories(job.inference->outputsDir, failure);
  if (failure)
    throw std::runtime_error("cannot create --outputs-dir '" +
                             job.inference->outputsDir +
                             "': " + failure.message());
}

} // namespace

int runRank(const JobDescription &job, const RendezvousInfo &info) {
  reportTruncationsAsRankFailures(info.rank, info.worldSize);
  reportWaitsWhenStopped();
  try {
    if (info.rank == 0)
      checkOutputs(job);
    if (pp_set_threads(rankThreads(job)) != PP_OK)
      throw std::runtime_error(std::string("--threads: ") + pp_last_error());
    if (pp_set_gemm_engine(job.gemmEngine.c_str()) != PP_OK)
      throw std::runtime_error(std::string("--gemm-engine: ") +
                               pp_last_error());
    Package package = Package::load(job.packageDir);
    // A rank links only with the members of its groups.
    RendezvousInfo linked = info;
    linked.agreement = packageIdentity(package);
    linked.disagreement = kPackageDisagreement;
    linked.peers = groupPeers(
        jobMesh(package, job.dataParallel, job.meshOrder, info.worldSize),
        info.rank);
    Communicator world(linked);
    RankGroups groups = connectRankGroups(package, world, job.dataParallel,
                                          job.meshOrder, job.tensorCollectives);
    std::unique_ptr<Backend> backend = createBackend(job, groups);
    package.loadStageLibrary(stageLibraryFor(package, backend->stageTarget(),
                                             job.cacheDir, std::cerr));
    if (job.inference)
      runInference(job, package, world, groups, *backend);
    else
      train(package, world, groups, *backend, job.trainer, std::cout);
  } catch (const std::exception &failure) {
    return reportRankFailure(info.rank, info.worldSize, failure);
  }
  return 0;
}

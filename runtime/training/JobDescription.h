//===- JobDescription.h - what one rank of a job runs -----------*- C++ -*-===//
//
// Everything a rank process needs besides its place in the job (torchrun's
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and the job secret): the
// package, the trainer's options, the device, threads and GEMM engine, the
// data-parallel size and mesh order, and for a forward-only run its input
// and output files. pp-run writes it once per job as JSON; pp-rank reads
// it (docs/tools/pp-rank.md).
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_TRAINING_JOBDESCRIPTION_H
#define PP_RUNTIME_TRAINING_JOBDESCRIPTION_H

#include "runtime/training/Trainer.h"

#include <optional>
#include <string>
#include <vector>

namespace pp::runtime {

/// The format version of job description files; readJobDescription reads
/// this version only.
constexpr int64_t kJobFormatVersion = 1;

/// A forward-only run (pp-run --infer).
struct InferenceJob {
  /// One ONNX TensorProto file per model input, in the model's order.
  std::vector<std::string> inputs;
  /// Where job rank 0 writes output_0.pb, output_1.pb, ...
  std::string outputsDir;
  /// The model was compiled as given (no --microbatch-size): each input
  /// file has exactly its input's shape.
  bool asGiven = false;
};

struct JobDescription {
  /// The compiled package every rank runs.
  std::string packageDir;
  /// "cpu" or "cuda".
  std::string device = "cpu";
  /// Threads per rank; 0 for the CPUs divided among LOCAL_WORLD_SIZE ranks.
  int threads = 0;
  /// pp_set_gemm_engine's name: auto, onednn, openblas, blis or pp.
  std::string gemmEngine = "auto";
  /// Data-parallel replicas of the package's pipeline.
  int64_t dataParallel = 1;
  /// The mesh's axes, outermost first; empty for pp,dp,tp.
  std::vector<std::string> meshOrder;
  TensorCollectives tensorCollectives = TensorCollectives::Auto;
  /// Which of the job's links seal their messages.
  LinkIntegrity linkIntegrity = LinkIntegrity::AcrossHosts;
  /// Seconds a rank waits for another before failing.
  int timeoutSeconds = 300;
  /// The cache directory (CacheDirectory.h), where a stage library the
  /// package does not carry is built on first use.
  std::string cacheDir;
  /// Set for a forward-only run; `trainer` then holds only the weights.
  std::optional<InferenceJob> inference;
  TrainerOptions trainer;
};

/// `job` as the JSON text of a job description file (kJobFormatVersion).
std::string formatJobDescription(const JobDescription &job);

/// Parses the JSON text of a job description file; `source` names it in
/// errors. Throws std::runtime_error naming the source, the key and the
/// fix for a malformed text, another format version, a missing or unknown
/// key, a value of the wrong type or out of range.
JobDescription parseJobDescription(const std::string &text,
                                   const std::string &source);

/// parseJobDescription of the file `path`.
JobDescription readJobDescription(const std::string &path);

/// Writes `job` to `path`, readable by this user only (mode 0600).
void writeJobDescription(const std::string &path, const JobDescription &job);

/// Why job rank 0 cannot write an output file `job` names (metrics, trace,
/// parameters, weights, gradients, profile; the checkpoint directory when
/// it saves checkpoints), naming the pp-run option; "" when it can.
std::string jobOutputsProblem(const JobDescription &job);

} // namespace pp::runtime

#endif // PP_RUNTIME_TRAINING_JOBDESCRIPTION_H

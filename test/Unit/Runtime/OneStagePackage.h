//===- OneStagePackage.h - in-memory packages for trainer tests -*- C++ -*-===//
//
// A one-stage training package whose stage functions a test writes: the
// input x and the mse labels of shape [2, 1], microbatches of 2; and what
// such functions return; and its training on one rank.
//
//===----------------------------------------------------------------------===//

#ifndef PP_TEST_UNIT_RUNTIME_ONESTAGEPACKAGE_H
#define PP_TEST_UNIT_RUNTIME_ONESTAGEPACKAGE_H

#include "runtime/package/Package.h"
#include "runtime/pp_kernels.h"
#include "runtime/training/Trainer.h"

#include <memory>
#include <ostream>

#include <string>
#include <utility>
#include <vector>

namespace pp::runtime {

/// A tensor of the manifest, f32 unless `dtype` says otherwise.
inline TensorInfo tensor(const std::string &name, Role role, Shape shape,
                         pp_dtype dtype = PP_DTYPE_F32) {
  return {name, role, dtype, std::move(shape)};
}

/// A new f32 tensor of shape [1] holding `value`.
inline pp_tensor *scalar(float value) {
  int64_t shape[] = {1};
  pp_tensor *tensor = nullptr;
  pp_tensor_create(PP_DTYPE_F32, 1, shape, &tensor);
  *static_cast<float *>(pp_tensor_data(tensor)) = value;
  return tensor;
}

/// Returns a loss of 1 (a scalar) as result 0 of the stage function of
/// `frame`.
inline void returnUnitLoss(pp_frame *frame) {
  int64_t none[] = {0};
  pp_tensor *loss = nullptr;
  pp_tensor_create(PP_DTYPE_F32, 0, none, &loss);
  *static_cast<float *>(pp_tensor_data(loss)) = 1.0f;
  pp_frame_result(frame, loss, 0);
}

/// One stage running `functions`, holding `parameters`, on one device.
inline Package oneStagePackage(std::vector<ParameterInfo> parameters,
                               std::vector<StageFunctionInfo> functions) {
  Package package;
  package.directory = "(in memory)";
  package.mesh = DeviceMesh({{"pp", 1, AxisKind::Pipeline}});
  package.numStages = 1;
  package.stageRanks = {0};
  package.microbatchSize = 2;
  package.lossKind = "mse";
  package.inputs = {tensor("x", Role::Input, {2, 1})};
  package.labels = tensor("labels", Role::Label, {2, 1});
  package.parameters = std::move(parameters);
  package.stages = {StageInfo{std::move(functions)}};
  package.indexGradientParts();
  return package;
}

/// Trains `package` with `options` on this process alone, the CPU
/// backend, logging to `log`.
inline void trainAlone(Package package, const TrainerOptions &options,
                       std::ostream &log) {
  Communicator world(RendezvousInfo{});
  RankGroups groups = connectRankGroups(package, world, 1, {});
  std::unique_ptr<Backend> backend = createCpuBackend(*groups.pipeline);
  train(package, world, groups, *backend, options, log);
}

} // namespace pp::runtime

#endif // PP_TEST_UNIT_RUNTIME_ONESTAGEPACKAGE_H

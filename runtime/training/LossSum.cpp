//===- LossSum.cpp - a batch's loss where the stages run ------------------===//

#include "runtime/training/LossSum.h"

namespace pp::runtime {

LossSum::LossSum(Backend &backend)
    : backend(backend),
      host(makeTensor({"loss_sum", Role::None, PP_DTYPE_F64, {}})) {
  placed.tensor = backend.place(host.get(), placed.copy);
}

void LossSum::add(pp_tensor *loss) {
  StateDevice where = backend.stateDevice();
  where.kernels.accumulateScalar(
      where.queue, static_cast<double *>(pp_tensor_data(placed.tensor)),
      floatsOf(loss));
}

double LossSum::read() {
  backend.fetch(placed.tensor, host.get());
  return *static_cast<const double *>(pp_tensor_data(host.get()));
}

} // namespace pp::runtime

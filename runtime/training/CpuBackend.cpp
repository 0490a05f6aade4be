//===- CpuBackend.cpp - stage functions on the host, CPU ranks' messages --===//

#include "runtime/training/Backend.h"

#include "runtime/communication/CommunicatorCollectives.h"
#include "runtime/device/Device.h"
#include "runtime/device/Queue.h"

namespace pp::runtime {
namespace {

/// Sends and receives a rank's messages over the pipeline communicator (the
/// trainer's StageRouter turns stages into ranks); both ends derive a
/// message's slot from (step, microbatch, sender, receiver, name).
class CommunicatorChannel : public MessageChannel {
public:
  explicit CommunicatorChannel(Communicator &communicator)
      : communicator(communicator) {}

  void setContext(int64_t step, int64_t microbatch) {
    this->step = step;
    this->microbatch = microbatch;
  }

  void send(int64_t stage, const std::string &name,
            const pp_tensor &tensor) override {
    communicator.send(static_cast<int>(stage),
                      slot(communicator.rank(), stage, name),
                      pp_tensor_data(const_cast<pp_tensor *>(&tensor)),
                      pp_tensor_nbytes(&tensor));
  }

  std::string recv(int64_t stage, const std::string &name,
                   pp_tensor &tensor) override {
    try {
      communicator.recv(static_cast<int>(stage),
                        slot(stage, communicator.rank(), name),
                        pp_tensor_data(&tensor), pp_tensor_nbytes(&tensor));
    } catch (const std::exception &error) {
      return "receiving '" + name + "' from rank " + std::to_string(stage) +
             ": " + error.what();
    }
    return "";
  }

  std::string await(int64_t stage, const std::string &name) override {
    try {
      communicator.await(static_cast<int>(stage),
                         slot(stage, communicator.rank(), name));
    } catch (const std::exception &error) {
      return "waiting for '" + name + "' from rank " + std::to_string(stage) +
             ": " + error.what();
    }
    return "";
  }

private:
  uint64_t slot(int64_t from, int64_t to, const std::string &name) const {
    return messageSlot(std::to_string(step) + "/" + std::to_string(microbatch) +
                       "/" + std::to_string(from) + ">" + std::to_string(to) +
                       "/" + name);
  }

  Communicator &communicator;
  int64_t step = 0, microbatch = 0;
};

/// The stage functions run on the host's default queue: at once, on the
/// calling thread, with results from the host's cache of buffers.
class CpuBackend : public Backend {
public:
  explicit CpuBackend(Communicator &communicator)
      : channel(communicator), queue(hostDevice().defaultQueue()) {}

  StageTarget stageTarget() const override { return StageTarget::Cpu; }

  pp_tensor *place(pp_tensor *host, TensorPtr &) override { return host; }

  void refresh(pp_tensor *, pp_tensor *) override {}

  TensorPtr convert(pp_tensor *input, pp_dtype to) override {
    pp_frame frame;
    configure(frame, 0, 0);
    return convertedBy(pp_cpu_cast, frame, input, to);
  }

  void fetch(pp_tensor *result, pp_tensor *host) override {
    if (result != host)
      queue.copy(pp_tensor_data(host), pp_tensor_data(result),
                 pp_tensor_nbytes(host));
  }

  StateDevice stateDevice() override { return {queue, cpuStateKernels()}; }

  std::unique_ptr<CollectiveGroup>
  connectCollectives(Communicator &ranks, const std::string &) override {
    return std::make_unique<CommunicatorCollectives>(ranks);
  }

  void configure(pp_frame &frame, int64_t step, int64_t microbatch) override {
    channel.setContext(step, microbatch);
    frame.channel = &channel;
    frame.queue = &queue;
  }

  /// A send has written its message when it returns: nothing to wait for.
  void finishStep() override {}

  bool servesMemoryPlans() const override { return true; }

private:
  CommunicatorChannel channel;
  Queue &queue;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(Communicator &communicator) {
  return std::make_unique<CpuBackend>(communicator);
}

} // namespace pp::runtime

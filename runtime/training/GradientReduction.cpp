//===- GradientReduction.cpp - data-parallel gradient sums ----------------===//

#include "runtime/training/GradientReduction.h"
#include "runtime/communication/LinkCollectives.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace pp::runtime {
namespace {

/// The bytes of an element of `dtype`.
size_t elementBytes(ReduceDtype dtype) {
  return dtype == ReduceDtype::BF16 ? sizeof(BFloat16) : sizeof(float);
}

} // namespace

GradientReducer::GradientReducer(CollectiveGroup &dataParallel,
                                 std::vector<pp_tensor *> gradients,
                                 size_t bucketBytes, GradientShares shares,
                                 Queue &compute, ReduceDtype dtype,
                                 StateKernels *kernels)
    : dataParallel(dataParallel), gradients(std::move(gradients)),
      shares(std::move(shares)), compute(compute), dtype(dtype),
      kernels(kernels) {
  if (dtype == ReduceDtype::BF16 && !kernels)
    throw std::invalid_argument("a bf16 gradient reduction needs the "
                                "kernels of the gradients' device");
  const GradientShares &given = this->shares;
  if (!given.flatOffsets.empty() &&
      (given.flatOffsets.size() != this->gradients.size() ||
       given.shareSizes.size() != this->gradients.size()))
    throw std::invalid_argument(
        "the gradient reduction lists " +
        std::to_string(this->gradients.size()) + " gradients, " +
        std::to_string(given.flatOffsets.size()) + " flat offsets and " +
        std::to_string(given.shareSizes.size()) + " share sizes");
  size_t bucketFloats = std::max<size_t>(1, bucketBytes / sizeof(float));
  const std::vector<pp_tensor *> &listed = this->gradients;
  size_t largest = 0;
  for (size_t first = 0; first < listed.size();) {
    // Gather tensors until the next would overflow the bucket.
    size_t last = first, floats = 0;
    do {
      floats += pp_tensor_numel(listed[last]);
      bucketOf.push_back(buckets.size());
      ++last;
    } while (last < listed.size() &&
             floats + pp_tensor_numel(listed[last]) <= bucketFloats);
    buckets.push_back({first, last, 0});
    largest = std::max(largest, floats);
    first = last;
  }
  if (dataParallel.size() == 1 || buckets.empty())
    return;
  Device &device = compute.device();
  reduction = device.createQueue();
  reductionDone = device.createEvent();
  for (size_t b = 0; b < buckets.size(); ++b)
    finalized.push_back(device.createEvent());
  staging = Buffer::allocate(*reduction, largest * elementBytes(dtype));
  isReady.assign(listed.size(), true);
  reduced = started = buckets.size();
  worker = std::thread([this] { run(); });
}

GradientReducer::~GradientReducer() {
  if (!worker.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  worker.join();
}

void GradientReducer::begin() {
  if (!worker.joinable())
    return;
  std::lock_guard<std::mutex> lock(mutex);
  isReady.assign(gradients.size(), false);
  for (Bucket &bucket : buckets)
    bucket.pending = bucket.last - bucket.first;
  reduced = started = 0;
  open = true;
}

void GradientReducer::ready(size_t index) {
  if (!worker.joinable())
    return;
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!open || isReady.at(index))
      return;
    // The bucket's last record marks where all of its gradients are final.
    compute.record(*finalized[bucketOf[index]]);
    isReady[index] = true;
    complete = --buckets[bucketOf[index]].pending == 0;
  }
  if (complete)
    changed.notify_all();
}

void GradientReducer::finish() {
  if (!worker.joinable())
    return;
  std::unique_lock<std::mutex> lock(mutex);
  for (size_t i = 0; i < gradients.size(); ++i)
    if (!isReady[i]) {
      compute.record(*finalized[bucketOf[i]]);
      isReady[i] = true;
      --buckets[bucketOf[i]].pending;
    }
  // Reduce what the communication thread has not started here rather than
  // wait for it to wake up.
  while (reduced < buckets.size() && !failure) {
    if (canStartNext())
      reduceNext(lock);
    else
      changed.wait(lock);
  }
  open = false;
  if (failure) {
    std::exception_ptr failed = failure;
    failure = nullptr;
    // The step stops here; the next begin() starts afresh.
    reduced = started = buckets.size();
    try {
      std::rethrow_exception(failed);
    } catch (const std::exception &error) {
      throw std::runtime_error(
          std::string("summing the gradients over the data-parallel "
                      "replicas: ") +
          error.what());
    }
  }
  // The compute queue's work from now on reads the sums.
  reduction->record(*reductionDone);
  compute.wait(*reductionDone);
}

double GradientReducer::reducingSeconds() const {
  std::lock_guard<std::mutex> lock(mutex);
  return seconds;
}

size_t GradientReducer::bytesPerStep() const {
  if (!worker.joinable())
    return 0;
  size_t elements = 0;
  for (pp_tensor *gradient : gradients)
    elements += pp_tensor_numel(gradient);
  return elements * elementBytes(dtype);
}

bool GradientReducer::canStartNext() const {
  return open && !failure && started == reduced && started < buckets.size() &&
         buckets[buckets.size() - 1 - started].pending == 0;
}

void GradientReducer::reduceNext(std::unique_lock<std::mutex> &lock) {
  const Bucket &bucket = buckets[buckets.size() - 1 - started];
  ++started;
  lock.unlock();
  auto start = std::chrono::steady_clock::now();
  std::exception_ptr failed;
  try {
    reduce(bucket);
  } catch (...) {
    failed = std::current_exception();
  }
  double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  lock.lock();
  seconds += took;
  if (failed)
    failure = failed;
  else
    ++reduced;
  changed.notify_all();
}

void GradientReducer::run() {
  try {
    compute.device().makeCurrent();
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex);
    failure = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    changed.wait(lock, [&] { return stopping || canStartNext(); });
    if (stopping)
      return;
    reduceNext(lock);
  }
}

void GradientReducer::reduce(const Bucket &bucket) {
  reduction->wait(*finalized[&bucket - buckets.data()]);
  if (dtype == ReduceDtype::BF16)
    reduceAs<BFloat16>(bucket);
  else
    reduceAs<float>(bucket);
}

template <typename T> void GradientReducer::reduceAs(const Bucket &bucket) {
  T *base = static_cast<T *>(staging->data());
  T *at = base;
  // The ranges of the sharded gradients each rank keeps; the others are
  // all-reduced.
  std::vector<OwnedRange> owned;
  std::vector<std::pair<size_t, size_t>> whole;
  for (size_t i = bucket.first; i < bucket.last; ++i) {
    size_t n = pp_tensor_numel(gradients[i]);
    stage(at, i, n);
    size_t position = at - base;
    int64_t offset = shares.flatOffsets.empty() ? -1 : shares.flatOffsets[i];
    if (offset < 0) {
      whole.push_back({position, n});
    } else {
      // Cut at the share boundaries.
      for (int64_t first = offset, last = offset + n; first < last;) {
        int64_t share = shares.shareSizes[i];
        int64_t owner = first / share;
        int64_t upTo = std::min(last, (owner + 1) * share);
        owned.push_back({position + static_cast<size_t>(first - offset),
                         static_cast<size_t>(upTo - first),
                         static_cast<int>(owner)});
        first = upTo;
      }
    }
    at += n;
  }
  size_t elements = at - base;
  if (owned.empty())
    whole = {{0, elements}};
  for (auto [first, count] : whole)
    dataParallel.allReduceSum(base + first, count, *reduction);
  if (!owned.empty())
    dataParallel.reduceScatterSum(base, elements, owned, *reduction);
  at = base;
  for (size_t i = bucket.first; i < bucket.last; ++i) {
    size_t n = pp_tensor_numel(gradients[i]);
    unstage(i, at, n);
    at += n;
  }
}

void GradientReducer::stage(float *at, size_t index, size_t n) {
  reduction->copy(at, pp_tensor_data(gradients[index]), n * sizeof(float));
}

void GradientReducer::stage(BFloat16 *at, size_t index, size_t n) {
  kernels->roundToBFloat16(
      *reduction, at,
      static_cast<const float *>(pp_tensor_data(gradients[index])),
      static_cast<int64_t>(n));
}

void GradientReducer::unstage(size_t index, const float *at, size_t n) {
  reduction->copy(pp_tensor_data(gradients[index]), at, n * sizeof(float));
}

void GradientReducer::unstage(size_t index, const BFloat16 *at, size_t n) {
  kernels->widenBFloat16(*reduction,
                         static_cast<float *>(pp_tensor_data(gradients[index])),
                         at, static_cast<int64_t>(n));
}

} // namespace pp::runtime

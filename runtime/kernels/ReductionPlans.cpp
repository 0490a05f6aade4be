//===- ReductionPlans.cpp - shapes of the reducing kernels ----------------===//

#include "runtime/kernels/ReductionPlans.h"

#include <string>

namespace pp::runtime {

std::optional<ReducePlan> reducePlan(pp_frame *frame, const char *kernel,
                                     const Shape &input, int64_t count,
                                     const int64_t *axes) {
  int64_t rank = static_cast<int64_t>(input.size());
  ReducePlan plan;
  plan.input = input;
  plan.kept = input;
  std::vector<bool> reduced(rank, false);
  for (int64_t i = 0; i < count; ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || reduced[axis]) {
      failFrame(frame,
                std::string(kernel) + ": axis " + std::to_string(axes[i]) +
                    (axis < 0 || axis >= rank ? " is out of range for shape "
                                              : " is named twice for shape ") +
                    formatShape(input));
      return std::nullopt;
    }
    reduced[axis] = true;
    plan.kept[axis] = 1;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d])
      plan.removed.push_back(input[d]);
  plan.groupStrides = broadcastStrides(plan.kept, input);
  plan.groups = numElements(plan.kept);
  plan.groupSize = plan.groups ? numElements(input) / plan.groups : 0;
  return plan;
}

std::optional<ReducePlan> reduceGradPlan(pp_frame *frame, const char *kernel,
                                         const Shape &reduced,
                                         const Shape &input, int64_t count,
                                         const int64_t *axes) {
  std::optional<ReducePlan> plan =
      reducePlan(frame, kernel, input, count, axes);
  if (!plan)
    return std::nullopt;
  if (reduced != plan->kept && reduced != plan->removed) {
    failFrame(frame, std::string(kernel) + ": shape " + formatShape(reduced) +
                         " is not " + formatShape(input) +
                         " reduced over the axes (" +
                         formatShape(plan->removed) + " or " +
                         formatShape(plan->kept) + ")");
    return std::nullopt;
  }
  return plan;
}

std::optional<ReducePlan> reduceMaxGradPlan(pp_frame *frame, pp_tensor *grad,
                                            pp_tensor *input, pp_tensor *result,
                                            int64_t count,
                                            const int64_t *axes) {
  if (shapeOf(grad) != shapeOf(result)) {
    failFrame(frame, "reduce_max_grad: grad " + formatShape(shapeOf(grad)) +
                         " and result " + formatShape(shapeOf(result)) +
                         " differ");
    return std::nullopt;
  }
  return reduceGradPlan(frame, "reduce_max_grad", shapeOf(result),
                        shapeOf(input), count, axes);
}

std::optional<LayerNormPlan> layerNormPlan(pp_frame *frame, const char *kernel,
                                           pp_tensor *input, pp_tensor *weight,
                                           pp_tensor *bias, pp_tensor *grad,
                                           int64_t axis, double epsilon) {
  Shape shape = shapeOf(input);
  std::string error;
  std::optional<AxisLayout> layout = axisLayout(shape, axis, kernel, error);
  if (!layout) {
    failFrame(frame, error);
    return std::nullopt;
  }
  if (axis < 0)
    axis += static_cast<int64_t>(shape.size());
  Shape normalized(shape.begin() + axis, shape.end());
  for (auto [what, tensor] : {std::pair{"weight", weight}, {"bias", bias}})
    if (tensor && shapeOf(tensor) != normalized) {
      failFrame(frame, std::string(kernel) + ": " + what + " " +
                           formatShape(shapeOf(tensor)) +
                           " must have the normalized shape " +
                           formatShape(normalized));
      return std::nullopt;
    }
  if (grad && shapeOf(grad) != shape) {
    failFrame(frame, std::string(kernel) + ": grad " +
                         formatShape(shapeOf(grad)) + " and input " +
                         formatShape(shape) + " differ");
    return std::nullopt;
  }
  if (epsilon < 0) {
    failFrame(frame, std::string(kernel) + ": epsilon " +
                         std::to_string(epsilon) + " is negative");
    return std::nullopt;
  }
  return LayerNormPlan{layout->outer, layout->size * layout->inner};
}

std::optional<LayerNormPlan> layerNormGradPlan(pp_frame *frame, pp_tensor *grad,
                                               pp_tensor *input,
                                               pp_tensor *weight, int64_t axis,
                                               double epsilon,
                                               int64_t resultIndex) {
  if (resultIndex < 0 || resultIndex > 2) {
    failFrame(frame, "layer_norm_grad: result " + std::to_string(resultIndex) +
                         " does not exist (0: input, 1: weight, 2: bias)");
    return std::nullopt;
  }
  return layerNormPlan(frame, "layer_norm_grad", input, weight, nullptr, grad,
                       axis, epsilon);
}

} // namespace pp::runtime

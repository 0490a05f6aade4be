//===- OptimizerTest.cpp - weight-decay exclusions and init ---------------===//

#include "runtime/training/Optimizer.h"
#include "runtime/training/ParameterInit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace pp::runtime;

namespace {

TEST(Optimizer, TheDefaultSkipsDecayForBiasesNormsAndEmbeddings) {
  Optimizer optimizer({});
  // Rank 0 and 1 (biases, norm scales and shifts), whatever the name.
  EXPECT_FALSE(optimizer.decays("blocks.0.fc.bias", 1));
  EXPECT_FALSE(optimizer.decays("blocks.0.fc.weight", 1));
  EXPECT_FALSE(optimizer.decays("temperature", 0));
  // Norms and embedding tables by a name component, at any rank.
  for (const char *name :
       {"ln_f.weight", "blocks.1.ln2.weight", "encoder/LayerNorm/gamma",
        "model.norm.weight", "layers.3.rmsnorm.scale", "transformer.wte.weight",
        "transformer.wpe.weight", "model.embed_tokens.weight",
        "bert.embeddings.word_embeddings.weight"})
    EXPECT_FALSE(optimizer.decays(name, 2)) << name;
  // Matrices elsewhere decay, also names that merely contain "ln".
  for (const char *name :
       {"blocks.0.attn.qkv.weight", "lm_head.weight", "fc1.weight",
        "onnx::MatMul_123", "kiln.weight", "tok.weight"})
    EXPECT_TRUE(optimizer.decays(name, 2)) << name;
}

TEST(Optimizer, NoDecayReplacesTheDefaultWithAWholeNameMatch) {
  OptimizerOptions options;
  options.noDecay = R"(.*\.bias|tok\.weight)";
  Optimizer optimizer(options);
  EXPECT_FALSE(optimizer.decays("fc.bias", 1));
  EXPECT_FALSE(optimizer.decays("tok.weight", 2));
  // The rank rule and the default names no longer apply; a partial match
  // is no match.
  EXPECT_TRUE(optimizer.decays("ln_f.weight", 1));
  EXPECT_TRUE(optimizer.decays("tok.weight.extra", 2));
  options.noDecay = "";
  Optimizer decaysAll(options);
  EXPECT_TRUE(decaysAll.decays("fc.bias", 1));
  options.noDecay = "(";
  EXPECT_THROW(Optimizer{options}, std::regex_error);
}

/// One AdamW or SGD step on {1, -2} with gradient {0.5, 0.25}.
std::vector<float> stepOnce(const char *kind, bool decay, float lr) {
  OptimizerOptions options;
  options.kind = kind;
  options.weightDecay = 0.1f;
  Optimizer optimizer(options);
  optimizer.layOut({{"p", 0, 2, decay}});
  std::vector<float> values = {1.0f, -2.0f}, gradient = {0.5f, 0.25f};
  optimizer.step(values.data(), gradient.data(), lr);
  return values;
}

TEST(Optimizer, AnExcludedParameterStepsWithoutDecay) {
  // AdamW's first step moves each element by lr (m / sqrt(v) = sign(g));
  // decay shrinks it by lr * wd first.
  EXPECT_EQ(stepOnce("adamw", false, 0.5f),
            (std::vector<float>{1.0f - 0.5f, -2.0f - 0.5f}));
  std::vector<float> decayed = stepOnce("adamw", true, 0.5f);
  EXPECT_FLOAT_EQ(decayed[0], 1.0f * (1 - 0.05f) - 0.5f);
  EXPECT_FLOAT_EQ(decayed[1], -2.0f * (1 - 0.05f) - 0.5f);
  // SGD adds wd * p to the gradient only when decaying.
  EXPECT_EQ(stepOnce("sgd", false, 0.5f),
            (std::vector<float>{1.0f - 0.25f, -2.0f - 0.125f}));
  std::vector<float> sgd = stepOnce("sgd", true, 0.5f);
  EXPECT_FLOAT_EQ(sgd[0], 1.0f - 0.5f * (0.5f + 0.1f));
  EXPECT_FLOAT_EQ(sgd[1], -2.0f - 0.5f * (0.25f - 0.2f));
}

/// torch.optim's AdamW and SGD (with momentum) on one tensor, element by
/// element: the formulas the flat optimizer must reproduce bit for bit.
struct ReferenceTensor {
  std::vector<float> values, first, second;
  int64_t steps = 0;

  void step(const OptimizerOptions &options, const std::vector<float> &gradient,
            float lr, bool decay) {
    ++steps;
    float weightDecay = decay ? options.weightDecay : 0.0f;
    first.resize(values.size());
    second.resize(values.size());
    float correction1 = 1.0f - std::pow(options.beta1, steps);
    float correction2 = 1.0f - std::pow(options.beta2, steps);
    for (size_t i = 0; i < values.size(); ++i) {
      if (options.kind == "sgd") {
        float direction = gradient[i] + weightDecay * values[i];
        first[i] =
            steps == 1 ? direction : options.momentum * first[i] + direction;
        values[i] -= lr * first[i];
        continue;
      }
      values[i] *= 1.0f - lr * weightDecay;
      first[i] =
          options.beta1 * first[i] + (1.0f - options.beta1) * gradient[i];
      second[i] = options.beta2 * second[i] +
                  (1.0f - options.beta2) * gradient[i] * gradient[i];
      float mHat = first[i] / correction1;
      float vHat = second[i] / correction2;
      values[i] -= lr * mHat / (std::sqrt(vHat) + options.epsilon);
    }
  }
};

TEST(Optimizer, AFlatStepGivesEachTensorsBitsAndKeepsItsState) {
  // Four tensors in one flat buffer (sizes that leave vector remainders),
  // two without decay; the third resumes from an imported state at step 5.
  const std::vector<int64_t> sizes = {7, 1, 33, 4};
  const std::vector<bool> decayed = {true, false, true, false};
  for (const char *kind : {"adamw", "sgd"}) {
    OptimizerOptions options;
    options.kind = kind;
    options.momentum = 0.9f;
    options.weightDecay = 0.05f;
    Optimizer optimizer(options);
    std::vector<OptimizerSegment> segments;
    std::vector<ReferenceTensor> reference(sizes.size());
    std::vector<float> values;
    for (size_t t = 0; t < sizes.size(); ++t) {
      int64_t begin = static_cast<int64_t>(values.size());
      segments.push_back(
          {"t" + std::to_string(t), begin, begin + sizes[t], decayed[t]});
      for (int64_t i = 0; i < sizes[t]; ++i)
        reference[t].values.push_back(0.3f - 0.017f * (i + 5 * t));
      values.insert(values.end(), reference[t].values.begin(),
                    reference[t].values.end());
    }
    optimizer.layOut(segments);
    ParameterState resumed{4, {}};
    for (const std::string &buffer : optimizerBufferNames(options))
      resumed.buffers[buffer].assign(sizes[2], 0.125f);
    optimizer.importState("t2", resumed);
    reference[2].steps = 4;
    reference[2].first.assign(sizes[2], 0.125f);
    reference[2].second.assign(sizes[2], 0.125f);
    std::vector<float> gradients(values.size());
    for (int step = 1; step <= 3; ++step) {
      float lr = 0.01f / step;
      for (size_t t = 0, at = 0; t < sizes.size(); ++t) {
        std::vector<float> gradient(sizes[t]);
        for (int64_t i = 0; i < sizes[t]; ++i, ++at)
          gradients[at] = gradient[i] = 0.02f * step - 0.003f * i + 0.1f * t;
        reference[t].step(options, gradient, lr, decayed[t]);
      }
      optimizer.step(values.data(), gradients.data(), lr);
    }
    std::vector<float> expected;
    for (size_t t = 0; t < sizes.size(); ++t) {
      expected.insert(expected.end(), reference[t].values.begin(),
                      reference[t].values.end());
      ParameterState state = optimizer.exportState("t" + std::to_string(t));
      EXPECT_EQ(state.steps, t == 2 ? 7 : 3) << kind << " t" << t;
      EXPECT_EQ(state.buffers.begin()->second, reference[t].first)
          << kind << " t" << t;
    }
    EXPECT_EQ(values, expected) << kind;
  }
}

TEST(Optimizer, RefusesSegmentsWithGapsAndForeignStates) {
  Optimizer optimizer({});
  EXPECT_THROW(optimizer.layOut({{"a", 0, 2, true}, {"b", 3, 4, true}}),
               std::invalid_argument);
  OptimizerOptions options;
  options.kind = "adamw";
  Optimizer adamw(options);
  adamw.layOut({{"a", 0, 2, true}});
  ParameterState state{1, {{"exp_avg", {1, 2, 3}}, {"exp_avg_sq", {1, 2, 3}}}};
  EXPECT_THROW(adamw.importState("a", state), std::invalid_argument);
  EXPECT_THROW(adamw.importState("b", state), std::invalid_argument);
}

/// The values fillRandomParameter gives a tensor of `shape` named `name`.
std::vector<float> randomInit(const std::string &name,
                              std::vector<int64_t> shape, uint64_t seed) {
  pp_tensor *tensor = nullptr;
  EXPECT_EQ(pp_tensor_create(PP_DTYPE_F32, static_cast<int64_t>(shape.size()),
                             shape.data(), &tensor),
            PP_OK);
  fillRandomParameter(tensor, name, seed);
  const float *data = static_cast<const float *>(pp_tensor_data(tensor));
  std::vector<float> values(data, data + pp_tensor_numel(tensor));
  pp_tensor_destroy(tensor);
  return values;
}

TEST(ParameterInit, RandomInitIsPyTorchLikeAndKeyedBySeedAndName) {
  // [out, in, k] = [8, 4, 4]: fan_in 16, bound 1/4.
  std::vector<float> conv = randomInit("conv.weight", {8, 4, 4}, 3);
  float largest = 0;
  for (float value : conv)
    largest = std::max(largest, std::fabs(value));
  EXPECT_LE(largest, 0.25f);
  EXPECT_GT(largest, 0.2f);
  EXPECT_EQ(randomInit("conv.weight", {8, 4, 4}, 3), conv);
  EXPECT_NE(randomInit("conv.weight", {8, 4, 4}, 4), conv);
  EXPECT_NE(randomInit("conv2.weight", {8, 4, 4}, 3), conv);
  // 1-D: norm scales ones, the rest zeros.
  EXPECT_EQ(randomInit("ln_f.weight", {3}, 3), std::vector<float>(3, 1.0f));
  EXPECT_EQ(randomInit("norm/scale", {2}, 3), std::vector<float>(2, 1.0f));
  EXPECT_EQ(randomInit("ln_f.bias", {3}, 3), std::vector<float>(3, 0.0f));
  EXPECT_EQ(randomInit("fc.bias", {5}, 3), std::vector<float>(5, 0.0f));
}

TEST(ParameterInit, ParsesTheInitNames) {
  EXPECT_EQ(parseParameterInit("model"), ParameterInit::Model);
  EXPECT_EQ(parseParameterInit("random"), ParameterInit::Random);
  EXPECT_EQ(parseParameterInit("zeros"), std::nullopt);
}

} // namespace

//===- OptimizerTest.cpp - weight-decay exclusions and init ---------------===//

#include "runtime/training/Optimizer.h"
#include "runtime/training/ParameterInit.h"

#include <gtest/gtest.h>

#include <cmath>

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
  std::vector<float> values = {1.0f, -2.0f}, gradient = {0.5f, 0.25f};
  optimizer.step("p", values.data(), gradient.data(), 2, lr, decay);
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

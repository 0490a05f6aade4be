//===- MemoryArenaTest.cpp - kernels served by a memory plan --------------===//

#include "runtime/kernels/MemoryArena.h"
#include "runtime/kernels/Frame.h"

#include <gtest/gtest.h>

using namespace pp::runtime;

namespace {

/// f32 [4] at 0, a result of 8 bytes (f32 [2]), f32 [4] at 64.
MemoryPlan plan() { return {128, {{16, 0}, {8, -1}, {16, 64}}}; }

/// A buffer of its own for one arena.
std::shared_ptr<ArenaBuffer> bufferOf(uint64_t bytes) {
  return std::make_shared<ArenaBuffer>(bytes);
}

float *floats(pp_tensor *tensor) {
  return static_cast<float *>(pp_tensor_data(tensor));
}

TEST(MemoryArenaTest, ServesThePlanCallAfterCall) {
  MemoryArena arena("stage0_forward", plan(), bufferOf(128));
  char *first = nullptr;
  for (int call = 0; call < 3; ++call) {
    pp_frame frame;
    frame.arena = &arena;
    arena.begin();
    pp_tensor *a = newTensor(&frame, PP_DTYPE_F32, {4});
    pp_tensor *result = newTensor(&frame, PP_DTYPE_F32, {2});
    pp_tensor *b = newTensor(&frame, PP_DTYPE_F32, {2, 2});
    ASSERT_TRUE(a && result && b) << frame.error;
    // The same bytes every call; the result on its own.
    if (call == 0)
      first = static_cast<char *>(pp_tensor_data(a));
    EXPECT_EQ(static_cast<char *>(pp_tensor_data(a)), first);
    EXPECT_EQ(static_cast<char *>(pp_tensor_data(b)), first + 64);
    EXPECT_EQ(pp_tensor_rank(b), 2);
    EXPECT_EQ(pp_tensor_nbytes(b), 16u);
    floats(a)[3] = 1.0f;
    floats(b)[0] = 2.0f;
    EXPECT_EQ(floats(a)[3], 1.0f);
    EXPECT_EQ(frame.heapAllocations, 1);
    pp_frame_release(&frame, a);
    pp_frame_release(&frame, b);
    pp_frame_result(&frame, result, 0);
    EXPECT_EQ(frame.error, "");
    EXPECT_EQ(arena.finish(), "");
  }
}

TEST(MemoryArenaTest, ARanksFunctionsShareOneBuffer) {
  // The forward's arena and the larger backward's, one call after the
  // other, both from the backward-sized buffer.
  auto shared = bufferOf(256);
  MemoryArena forward("stage0_forward", plan(), shared);
  MemoryArena backward("stage0_backward", {256, {{64, 192}}}, shared);
  for (MemoryArena *arena : {&forward, &backward, &forward}) {
    pp_frame frame;
    frame.arena = arena;
    arena->begin();
    pp_tensor *a =
        newTensor(&frame, PP_DTYPE_F32, {arena == &forward ? 4 : 16});
    ASSERT_NE(a, nullptr) << frame.error;
    EXPECT_EQ(static_cast<char *>(pp_tensor_data(a)),
              static_cast<char *>(shared->data()) +
                  (arena == &forward ? 0 : 192));
    pp_frame_release(&frame, a);
    if (arena == &forward) {
      pp_frame_result(&frame, newTensor(&frame, PP_DTYPE_F32, {2}), 0);
      pp_frame_release(&frame, newTensor(&frame, PP_DTYPE_F32, {4}));
    }
    EXPECT_EQ(frame.error, "");
    EXPECT_EQ(arena->finish(), "");
  }
}

TEST(MemoryArenaTest, ABufferSmallerThanThePlanIsAnError) {
  MemoryArena arena("stage0_backward", {256, {{64, 192}}}, bufferOf(128));
  pp_frame frame;
  frame.arena = &arena;
  arena.begin();
  EXPECT_EQ(newTensor(&frame, PP_DTYPE_F32, {16}), nullptr);
  EXPECT_EQ(frame.error,
            "stage0_backward: cannot allocate its arena of 256 bytes");
}

TEST(MemoryArenaTest, AnotherSizeNamesTheFunctionIndexAndSizes) {
  MemoryArena arena("stage1_backward", plan(), bufferOf(128));
  pp_frame frame;
  frame.arena = &arena;
  arena.begin();
  pp_tensor *a = newTensor(&frame, PP_DTYPE_F32, {4});
  EXPECT_EQ(newTensor(&frame, PP_DTYPE_F32, {3}), nullptr);
  EXPECT_EQ(
      frame.error,
      "stage1_backward: allocation 1 asks for 12 bytes (f32, shape 3), but "
      "its memory plan has 8 bytes there; the manifest and the stage library "
      "disagree: recompile the model");
  pp_frame_release(&frame, a);
}

TEST(MemoryArenaTest, MoreOrFewerAllocationsThanPlanned) {
  MemoryArena arena("stage0_forward", {64, {{4, 0}}}, bufferOf(64));
  pp_frame frame;
  frame.arena = &arena;
  arena.begin();
  EXPECT_EQ(arena.finish(), "stage0_forward made 0 allocations, but its "
                            "memory plan lists 1; the manifest and the stage "
                            "library disagree: recompile the model");
  pp_tensor *a = newTensor(&frame, PP_DTYPE_F32, {});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(newTensor(&frame, PP_DTYPE_F32, {}), nullptr);
  EXPECT_EQ(
      frame.error,
      "stage0_forward: allocation 1 of 4 bytes (f32, shape scalar) is past "
      "the end of its memory plan, which lists 1; the manifest and the stage "
      "library disagree: recompile the model");
  pp_frame_release(&frame, a);
}

TEST(MemoryArenaTest, AnArenaTensorCannotBeAResult) {
  MemoryArena arena("stage0_forward", {64, {{4, 0}}}, bufferOf(64));
  pp_frame frame;
  frame.arena = &arena;
  arena.begin();
  pp_tensor *a = newTensor(&frame, PP_DTYPE_F32, {1});
  pp_frame_result(&frame, a, 0);
  EXPECT_NE(frame.error.find("result 0 lives in the stage function's arena"),
            std::string::npos)
      << frame.error;
  EXPECT_TRUE(frame.results.empty());
}

TEST(MemoryArenaTest, AfterAFailureTheHeapServes) {
  MemoryArena arena("stage0_forward", {64, {{4, 0}}}, bufferOf(64));
  pp_frame frame;
  frame.arena = &arena;
  arena.begin();
  frame.error = "an earlier kernel failed";
  pp_tensor *a = newTensor(&frame, PP_DTYPE_F32, {8});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(frame.heapAllocations, 1);
  EXPECT_EQ(frame.error, "an earlier kernel failed");
  pp_frame_release(&frame, a);
}

} // namespace

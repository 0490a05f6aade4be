//===- TensorValuesTest.cpp - reading an ONNX tensor's values -------------===//
//
// readTensor reads a tensor's raw bytes in place (a model's weights are never
// copied on import), converts typed fields, and names a tensor that holds too
// few values.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/GraphImporter.h"

#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstring>

using namespace mlir;
using pp::onnx_frontend::readTensor;
using pp::onnx_frontend::TensorValues;

namespace {

/// A FLOAT tensor of shape `dims`.
onnx::TensorProto floatTensor(std::vector<int64_t> dims) {
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims)
    tensor.add_dims(dim);
  return tensor;
}

std::vector<float> floatsOf(const TensorValues &values) {
  std::vector<float> floats(values.bytes().size() / sizeof(float));
  std::memcpy(floats.data(), values.bytes().data(), values.bytes().size());
  return floats;
}

TEST(TensorValuesTest, RawBytesAreReadInPlace) {
  MLIRContext context;
  Builder builder(&context);
  onnx::TensorProto tensor = floatTensor({2, 2});
  std::vector<float> values = {1.0f, -2.0f, 3.5f, 0.25f};
  tensor.set_raw_data(values.data(), values.size() * sizeof(float));
  FailureOr<TensorValues> read =
      readTensor(tensor, "tensor 'w'", UnknownLoc::get(&context), builder);
  ASSERT_TRUE(succeeded(read));
  EXPECT_EQ(read->bytes().data(), tensor.raw_data().data());
  EXPECT_TRUE(read->converted.empty());
  EXPECT_EQ(floatsOf(*read), values);
  EXPECT_EQ(read->type.getShape(), ArrayRef<int64_t>({2, 2}));
}

TEST(TensorValuesTest, TypedFieldsAreConverted) {
  MLIRContext context;
  Builder builder(&context);
  onnx::TensorProto tensor = floatTensor({3});
  for (float value : {0.5f, 1.5f, -4.0f})
    tensor.add_float_data(value);
  FailureOr<TensorValues> read =
      readTensor(tensor, "tensor 'b'", UnknownLoc::get(&context), builder);
  ASSERT_TRUE(succeeded(read));
  EXPECT_EQ(read->raw, nullptr);
  EXPECT_EQ(floatsOf(*read), std::vector<float>({0.5f, 1.5f, -4.0f}));
}

TEST(TensorValuesTest, TooFewRawBytesAreNamed) {
  MLIRContext context;
  Builder builder(&context);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    message = diagnostic.str();
    return success();
  });
  onnx::TensorProto tensor = floatTensor({4});
  tensor.set_raw_data(std::string(3 * sizeof(float), '\0'));
  EXPECT_TRUE(failed(
      readTensor(tensor, "tensor 'w'", UnknownLoc::get(&context), builder)));
  EXPECT_EQ(message, "tensor 'w' does not hold the 4 values its shape needs; "
                     "the model file is damaged");
}

} // namespace

//===- TensorFiles.cpp - tensors in ONNX TensorProto files ----------------===//

#include "tools/pp-rank/TensorFiles.h"

#include "runtime/core/InputFile.h"
#include "runtime/core/OutputFile.h"
#include "runtime/core/Shapes.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>

using namespace pp::runtime;

namespace {

/// The runtime dtype of an ONNX element type, or nullopt.
std::optional<pp_dtype> dtypeOf(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return PP_DTYPE_F32;
  case onnx::TensorProto::DOUBLE:
    return PP_DTYPE_F64;
  case onnx::TensorProto::INT64:
    return PP_DTYPE_I64;
  case onnx::TensorProto::INT32:
    return PP_DTYPE_I32;
  case onnx::TensorProto::BOOL:
    return PP_DTYPE_BOOL;
  case onnx::TensorProto::FLOAT16:
    return PP_DTYPE_F16;
  case onnx::TensorProto::BFLOAT16:
    return PP_DTYPE_BF16;
  default:
    return std::nullopt;
  }
}

onnx::TensorProto::DataType onnxTypeOf(pp_dtype dtype) {
  switch (dtype) {
  case PP_DTYPE_F64:
    return onnx::TensorProto::DOUBLE;
  case PP_DTYPE_I64:
    return onnx::TensorProto::INT64;
  case PP_DTYPE_I32:
    return onnx::TensorProto::INT32;
  case PP_DTYPE_BOOL:
    return onnx::TensorProto::BOOL;
  case PP_DTYPE_F16:
    return onnx::TensorProto::FLOAT16;
  case PP_DTYPE_BF16:
    return onnx::TensorProto::BFLOAT16;
  default:
    return onnx::TensorProto::FLOAT;
  }
}

/// Copies `count` values of a typed field into `out` as `T`; false when
/// the field holds another count.
template <typename T, typename Field>
bool copyField(const Field &field, int64_t count, void *out) {
  if (field.size() != count)
    return false;
  T *values = static_cast<T *>(out);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<T>(field.Get(static_cast<int>(i)));
  return true;
}

/// The error of reading the tensor file `path`.
std::runtime_error readError(const std::string &path,
                             const std::string &problem) {
  return std::runtime_error("cannot read the tensor file '" + path +
                            "': " + problem);
}

/// The TensorProto in the file `path`.
onnx::TensorProto parseTensorFile(const std::string &path) {
  std::string bytes = readInputFile(path, "the tensor file");
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    throw readError(path, "it is not a serialized onnx.TensorProto");
  return proto;
}

} // namespace

Shape readTensorFileShape(const std::string &path) {
  onnx::TensorProto proto = parseTensorFile(path);
  return Shape(proto.dims().begin(), proto.dims().end());
}

TensorFile readTensorFile(const std::string &path) {
  auto fail = [&](const std::string &problem) {
    return readError(path, problem);
  };
  onnx::TensorProto proto = parseTensorFile(path);
  std::optional<pp_dtype> dtype = dtypeOf(proto.data_type());
  if (!dtype)
    throw fail("its element type " +
               (onnx::TensorProto::DataType_IsValid(proto.data_type())
                    ? onnx::TensorProto::DataType_Name(
                          static_cast<onnx::TensorProto::DataType>(
                              proto.data_type()))
                    : std::to_string(proto.data_type())) +
               " is not one pp-run reads (FLOAT, FLOAT16, BFLOAT16, DOUBLE, "
               "INT64, INT32, BOOL)");
  if (proto.has_data_location() &&
      proto.data_location() == onnx::TensorProto::EXTERNAL)
    throw fail("its values are in an external file, which pp-run does not "
               "read");
  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count))
      throw fail("its shape " + formatShape(shape) + " is not a valid shape");
  pp_tensor *raw = nullptr;
  if (pp_tensor_create(*dtype, static_cast<int64_t>(shape.size()),
                       shape.data(), &raw) != PP_OK)
    throw fail(pp_last_error());
  TensorFile result{proto.name(), TensorPtr(raw)};
  void *out = pp_tensor_data(raw);
  size_t bytes = pp_tensor_nbytes(raw);
  bool ok = true;
  if (proto.has_raw_data()) {
    ok = proto.raw_data().size() == bytes;
    if (ok && bytes)
      std::memcpy(out, proto.raw_data().data(), bytes);
  } else if (*dtype == PP_DTYPE_F32) {
    ok = copyField<float>(proto.float_data(), count, out);
  } else if (*dtype == PP_DTYPE_F64) {
    ok = copyField<double>(proto.double_data(), count, out);
  } else if (*dtype == PP_DTYPE_I64) {
    ok = copyField<int64_t>(proto.int64_data(), count, out);
  } else if (*dtype == PP_DTYPE_I32) {
    ok = copyField<int32_t>(proto.int32_data(), count, out);
  } else if (*dtype == PP_DTYPE_F16 || *dtype == PP_DTYPE_BF16) {
    // ONNX keeps 16-bit floats' bits in int32_data.
    ok = copyField<uint16_t>(proto.int32_data(), count, out);
  } else {
    // ONNX keeps bools in int32_data.
    ok = copyField<uint8_t>(proto.int32_data(), count, out);
  }
  if (!ok)
    throw fail("it holds the wrong number of values for its shape " +
               formatShape(shape) + " " + pp_dtype_name(*dtype));
  return result;
}

void writeTensorFile(const std::string &path, const std::string &name,
                     pp_tensor *tensor) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnxTypeOf(pp_tensor_dtype(tensor)));
  for (int64_t dim : shapeOf(tensor))
    proto.add_dims(dim);
  proto.set_raw_data(pp_tensor_data(tensor), pp_tensor_nbytes(tensor));
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw std::runtime_error("cannot write the output file '" + path +
                             "': the tensor does not fit in one protobuf");
  pp::runtime::writeOutputFile(path, bytes, "the output file");
}

//===- ExternalData.h - ONNX tensors kept in external files -----*- C++ -*-===//
//
// Models over 2 GiB (protobuf's limit), and those torch.onnx.export's
// dynamo exporter writes for large models, keep their weights in files
// beside the model: a tensor with `data_location: EXTERNAL` names its file
// (`location`, relative to the model's folder), where its bytes start
// (`offset`), how many there are (`length`) and optionally the file's SHA-1
// (`checksum`). pp reads such files only from inside the model's folder,
// regular files only, each tensor's bytes read straight into the tensor
// (no second copy of the weights).
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_ONNX_EXTERNALDATA_H
#define PP_FRONTENDS_ONNX_EXTERNALDATA_H

#include "llvm/ADT/StringRef.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace pp::onnx_frontend {

/// Reads the bytes of every tensor of `model` kept in an external file (the
/// initializers and the tensors of node attributes, subgraphs included)
/// into its raw_data, leaving it an ordinary tensor; `tensors`, when given,
/// gets those tensors, in the order read. The files are found in the folder
/// of `modelPath`. Returns what is wrong (naming the tensor, the file and
/// the fix): a location that is absolute, has a `..` component or leads out
/// of the model's folder through a symlink; a file that is missing, not a
/// regular file (a device, a FIFO), shorter than offset + length, or whose
/// SHA-1 is not its checksum; a key that is not a number or not ONNX's;
/// or "" when every tensor was read.
std::string
loadExternalData(onnx::ModelProto &model, llvm::StringRef modelPath,
                 std::vector<onnx::TensorProto *> *tensors = nullptr);

/// The paths of the external data files the binary ONNX model `contents`
/// (at `modelPath`) names, each once (none for a model that names none or
/// does not parse): what a compiled model depends on besides its file.
std::vector<std::string> externalDataFiles(llvm::StringRef contents,
                                           llvm::StringRef modelPath);

} // namespace pp::onnx_frontend

#endif // PP_FRONTENDS_ONNX_EXTERNALDATA_H

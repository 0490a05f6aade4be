//===- ExternalData.cpp - ONNX tensors kept in external files -------------===//

#include "frontends/onnx/ExternalData.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace pp::onnx_frontend {

namespace {

/// A tensor of the model and how messages name it.
using TensorVisitor =
    std::function<std::string(onnx::TensorProto &, const std::string &)>;

std::string forEachTensor(onnx::GraphProto &graph, const TensorVisitor &visit);

/// Visits the tensors of `attribute`, an attribute of `node`, and those of
/// its subgraphs.
std::string forEachTensor(onnx::AttributeProto &attribute,
                          const std::string &node, const TensorVisitor &visit) {
  std::string what = "the tensor of attribute '" + attribute.name() +
                     "' of node '" + node + "'";
  if (attribute.has_t())
    if (std::string problem = visit(*attribute.mutable_t(), what);
        !problem.empty())
      return problem;
  for (onnx::TensorProto &tensor : *attribute.mutable_tensors())
    if (std::string problem = visit(tensor, what); !problem.empty())
      return problem;
  if (attribute.has_g())
    if (std::string problem = forEachTensor(*attribute.mutable_g(), visit);
        !problem.empty())
      return problem;
  for (onnx::GraphProto &graph : *attribute.mutable_graphs())
    if (std::string problem = forEachTensor(graph, visit); !problem.empty())
      return problem;
  return "";
}

/// Visits the initializers of `graph` and the tensors of its nodes'
/// attributes, subgraphs included; stops at the first problem.
std::string forEachTensor(onnx::GraphProto &graph, const TensorVisitor &visit) {
  for (onnx::TensorProto &init : *graph.mutable_initializer())
    if (std::string problem = visit(init, "initializer '" + init.name() + "'");
        !problem.empty())
      return problem;
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &attribute : *node.mutable_attribute())
      if (std::string problem = forEachTensor(
              attribute, node.name().empty() ? node.op_type() : node.name(),
              visit);
          !problem.empty())
        return problem;
  return "";
}

/// The bytes of one element of ONNX's `dataType`, or nullopt for types
/// without a fixed size (strings) or unknown ones.
std::optional<uint64_t> elementBytes(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return 1;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return 2;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::COMPLEX64:
    return 8;
  case onnx::TensorProto::COMPLEX128:
    return 16;
  default:
    return std::nullopt;
  }
}

/// The bytes `tensor`'s shape and type take, or nullopt for a type without
/// a fixed size or a size past 2^64.
std::optional<uint64_t> bytesOf(const onnx::TensorProto &tensor) {
  std::optional<uint64_t> element = elementBytes(tensor.data_type());
  if (!element)
    return std::nullopt;
  uint64_t bytes = *element;
  for (int64_t dim : tensor.dims())
    if (dim < 0 ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes))
      return std::nullopt;
  return bytes;
}

/// An open external data file.
struct DataFile {
  int fd = -1;
  uint64_t size = 0;
  /// Its path as messages name it (the model's folder and the location).
  std::string path;
  bool checksumChecked = false;
};

/// Reads external data from the files in one model's folder, opening each
/// file once.
class ExternalDataReader {
public:
  explicit ExternalDataReader(llvm::StringRef modelPath) {
    folder = llvm::sys::path::parent_path(modelPath).str();
    if (folder.empty())
      folder = ".";
  }
  ~ExternalDataReader() {
    for (auto &[location, file] : files)
      ::close(file.fd);
  }
  ExternalDataReader(const ExternalDataReader &) = delete;
  ExternalDataReader &operator=(const ExternalDataReader &) = delete;

  /// Reads `tensor`'s external bytes into its raw_data.
  std::string read(onnx::TensorProto &tensor, const std::string &what);

private:
  /// The file at `location`, opened, or a problem.
  std::string open(const std::string &location, const std::string &what,
                   DataFile *&file);
  /// Checks the SHA-1 of `file` against `checksum`.
  std::string checkChecksum(DataFile &file, llvm::StringRef checksum,
                            const std::string &what);

  std::string folder;
  std::map<std::string, DataFile> files;
};

std::string ExternalDataReader::open(const std::string &location,
                                     const std::string &what, DataFile *&file) {
  if (auto it = files.find(location); it != files.end()) {
    file = &it->second;
    return "";
  }
  std::string fix = "; keep the external data files in the model's folder '" +
                    folder +
                    "' and name them relative to it (as onnx.save_model("
                    "..., save_as_external_data=True) does)";
  if (location.empty())
    return what + " keeps its data in an external file but names none (its "
                  "'location' is empty); the model file is damaged";
  if (llvm::sys::path::is_absolute(location))
    return what + " keeps its data in '" + location +
           "', an absolute path; pp reads external data only from inside "
           "the model's folder" +
           fix;
  for (llvm::StringRef part : llvm::make_range(llvm::sys::path::begin(location),
                                               llvm::sys::path::end(location)))
    if (part == "..")
      return what + " keeps its data in '" + location +
             "', which leads out of the model's folder through '..'" + fix;
  llvm::SmallString<256> path(folder);
  llvm::sys::path::append(path, location);
  llvm::SmallString<256> realFolder, realPath;
  if (std::error_code error = llvm::sys::fs::real_path(folder, realFolder))
    return "cannot find the model's folder '" + folder +
           "': " + error.message();
  if (std::error_code error = llvm::sys::fs::real_path(path, realPath))
    return what + " keeps its data in '" + path.str().str() +
           "', which cannot be opened: " + error.message() +
           "; copy the external data file beside the model";
  if (!llvm::StringRef(realPath).starts_with((realFolder + "/").str()))
    return what + " keeps its data in '" + path.str().str() +
           "', a symlink that leads out of the model's folder (to '" +
           realPath.str().str() + "')" + fix;
  struct stat status;
  if (::stat(realPath.c_str(), &status) != 0 || !S_ISREG(status.st_mode))
    return what + " keeps its data in '" + path.str().str() +
           "', which is not a regular file (a device, a FIFO or a folder); "
           "pp reads external data only from regular files: name the file "
           "that holds the bytes";
  int fd =
      ::open(realPath.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return what + " keeps its data in '" + path.str().str() +
           "', which cannot be opened: " + std::strerror(errno);
  // The file opened is the one checked (no swap since).
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    return what + " keeps its data in '" + path.str().str() +
           "', which is not a regular file";
  }
  file = &files[location];
  file->fd = fd;
  file->size = static_cast<uint64_t>(status.st_size);
  file->path = path.str().str();
  return "";
}

std::string ExternalDataReader::checkChecksum(DataFile &file,
                                              llvm::StringRef checksum,
                                              const std::string &what) {
  if (file.checksumChecked)
    return "";
  EVP_MD_CTX *context = EVP_MD_CTX_new();
  bool ok = context && EVP_DigestInit_ex(context, EVP_sha1(), nullptr);
  std::vector<char> buffer(1 << 20);
  for (uint64_t at = 0; ok && at < file.size;) {
    ssize_t got = ::pread(file.fd, buffer.data(), buffer.size(), at);
    if (got < 0 && errno == EINTR)
      continue;
    ok = got > 0 && EVP_DigestUpdate(context, buffer.data(), got);
    at += got > 0 ? got : 0;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digestBytes = 0;
  ok = ok && EVP_DigestFinal_ex(context, digest, &digestBytes);
  EVP_MD_CTX_free(context);
  if (!ok)
    return "cannot read '" + file.path + "' to check its SHA-1 checksum";
  std::string actual = llvm::toHex(llvm::ArrayRef<uint8_t>(digest, digestBytes),
                                   /*LowerCase=*/true);
  if (!checksum.equals_insensitive(actual))
    return what + " keeps its data in '" + file.path + "', whose SHA-1 is " +
           actual + ", not its checksum " + checksum.str() +
           ": the file was changed or belongs to another model; export the "
           "model again";
  file.checksumChecked = true;
  return "";
}

std::string ExternalDataReader::read(onnx::TensorProto &tensor,
                                     const std::string &what) {
  std::string location, checksum;
  std::optional<uint64_t> offset, length;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    const std::string &key = entry.key();
    if (key == "location") {
      location = entry.value();
      continue;
    }
    if (key == "checksum") {
      checksum = entry.value();
      continue;
    }
    if (key != "offset" && key != "length")
      return what + " has the external data key '" + key +
             "', which is none of ONNX's (location, offset, length, "
             "checksum); the model file is damaged";
    uint64_t number;
    if (llvm::StringRef(entry.value()).getAsInteger(10, number))
      return what + " has the external data " + key + " '" + entry.value() +
             "', which is not a byte count; the model file is damaged";
    (key == "offset" ? offset : length) = number;
  }
  DataFile *file = nullptr;
  if (std::string problem = open(location, what, file); !problem.empty())
    return problem;
  if (!checksum.empty())
    if (std::string problem = checkChecksum(*file, checksum, what);
        !problem.empty())
      return problem;
  std::optional<uint64_t> expected = bytesOf(tensor);
  uint64_t start = offset.value_or(0);
  if (!length)
    length =
        expected ? *expected : (file->size > start ? file->size - start : 0);
  if (expected && *length != *expected)
    return what + " keeps " + std::to_string(*length) + " bytes in '" +
           file->path + "', but its shape and type take " +
           std::to_string(*expected) + "; the model file is damaged";
  if (start > file->size || *length > file->size - start)
    return what + " keeps its data at bytes " + std::to_string(start) + " to " +
           std::to_string(start + *length) + " of '" + file->path +
           "', which holds only " + std::to_string(file->size) +
           " bytes: the file is truncated or belongs to another model; copy "
           "it again or export the model again";
  std::string *raw = tensor.mutable_raw_data();
  raw->resize(*length);
  for (uint64_t done = 0; done < *length;) {
    ssize_t got =
        ::pread(file->fd, raw->data() + done, *length - done, start + done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return "cannot read the data of " + what + " from '" + file->path +
             "': " + (got < 0 ? std::strerror(errno) : "the file shrank");
    done += static_cast<uint64_t>(got);
  }
  tensor.clear_external_data();
  tensor.clear_data_location();
  return "";
}

} // namespace

std::string loadExternalData(onnx::ModelProto &model, llvm::StringRef modelPath,
                             std::vector<onnx::TensorProto *> *tensors) {
  ExternalDataReader reader(modelPath);
  return forEachTensor(
      *model.mutable_graph(),
      [&](onnx::TensorProto &tensor, const std::string &what) -> std::string {
        if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
          return "";
        if (tensors)
          tensors->push_back(&tensor);
        return reader.read(tensor, what);
      });
}

std::vector<std::string> externalDataFiles(llvm::StringRef contents,
                                           llvm::StringRef modelPath) {
  // Every external tensor has the key "location": most models, without
  // one, need no parse.
  onnx::ModelProto model;
  if (!contents.contains("location") ||
      !model.ParseFromArray(contents.data(), static_cast<int>(contents.size())))
    return {};
  llvm::StringRef folder = llvm::sys::path::parent_path(modelPath);
  std::set<std::string> paths;
  forEachTensor(*model.mutable_graph(),
                [&](onnx::TensorProto &tensor, const std::string &) {
                  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
                    for (const auto &entry : tensor.external_data())
                      if (entry.key() == "location") {
                        llvm::SmallString<256> path(folder);
                        llvm::sys::path::append(path, entry.value());
                        paths.insert(path.str().str());
                      }
                  return std::string();
                });
  return {paths.begin(), paths.end()};
}

} // namespace pp::onnx_frontend

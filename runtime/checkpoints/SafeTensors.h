//===- SafeTensors.h - tensors by name, safetensors format ------*- C++ -*-===//
//
// The safetensors format (https://github.com/huggingface/safetensors), as
// checkpoints and Hugging Face's save_pretrained use it:
//
//   bytes [0, 8)       N, the header's length, a little-endian uint64;
//   bytes [8, 8 + N)   the header, a JSON object: per tensor
//                        "NAME": {"dtype": "F32", "shape": [d0, ...],
//                                 "data_offsets": [BEGIN, END]}
//                      and optionally "__metadata__": {"KEY": "VALUE", ...}
//                      (strings only), padded with spaces so that the data
//                      starts at a multiple of 8;
//   bytes [8 + N, end) the data: tensor NAME's raw little-endian values at
//                      [8 + N + BEGIN, 8 + N + END).
//
// The writer writes F32 tensors in the order it is given them, back to back
// from offset 0. The reader maps the file and refuses anything else than
// this layout: a file shorter than 8 bytes, a header length past the end,
// a header that is not a JSON object, a repeated name, an entry that is not
// an object of exactly those three fields, a dtype the format does not
// define, a negative or non-integer dimension, offsets whose length is not
// the shape's bytes, data ranges that overlap, leave holes, or leave the
// file, and metadata that is not an object of strings. It reads F32, F16,
// BF16 and F64 tensors as f32 (F64 rounded to nearest); the integer, bool
// and 8-bit float dtypes it lists but does not convert.
//
//===----------------------------------------------------------------------===//

#ifndef PP_RUNTIME_SAFETENSORS_H
#define PP_RUNTIME_SAFETENSORS_H

#include "runtime/core/MappedFile.h"
#include "runtime/core/OutputFile.h"
#include "runtime/core/Shapes.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pp::runtime {

/// A tensor's name and shape, as a safetensors header lists it, and its
/// dtype ("F32", "BF16", ...: the format's names).
struct TensorEntry {
  std::string name;
  Shape shape;
  std::string dtype = "F32";
};

/// True when SafeTensorsFile::read converts tensors of `dtype` to f32.
bool convertsToF32(const std::string &dtype);

/// Writes a safetensors file whose tensors are known up front and whose
/// values arrive one tensor at a time, in the listed order, so that no
/// more than one needs to be in memory. Values arrive as f32 and are
/// written in their entry's dtype: F32, or BF16 and F16 rounded to nearest
/// even.
class SafeTensorsWriter {
public:
  /// Creates `path` (an OutputFile, in place at finish()) and writes the
  /// header for `entries` (in that order)
  /// and `metadata`. Throws std::runtime_error when it cannot, or when a
  /// name repeats or is "__metadata__".
  SafeTensorsWriter(const std::string &path,
                    const std::vector<TensorEntry> &entries,
                    const std::map<std::string, std::string> &metadata);
  /// Appends the values of the next listed tensor, which must be `name`.
  void add(const std::string &name, const float *values);
  ~SafeTensorsWriter();
  SafeTensorsWriter(const SafeTensorsWriter &) = delete;
  SafeTensorsWriter &operator=(const SafeTensorsWriter &) = delete;
  /// Makes the file durable and puts it in place; throws std::runtime_error when
  /// a tensor is missing or writing failed.
  void finish();
  /// Per tensor added so far, the SHA-256 (hex) of the bytes written for
  /// it: what SafeTensorsFile::sha256 of the finished file gives.
  const std::map<std::string, std::string> &digests() const {
    return tensorDigests;
  }
  /// The metadata the header holds.
  const std::map<std::string, std::string> &metadata() const { return meta; }

private:
  std::string path;
  std::vector<TensorEntry> entries;
  std::map<std::string, std::string> meta;
  size_t next = 0;
  std::map<std::string, std::string> tensorDigests;
  /// The file being written; null once finished.
  std::unique_ptr<OutputFile> file;
};

/// A safetensors file mapped read-only. Move-only; unmaps when destroyed.
class SafeTensorsFile {
public:
  /// Maps and checks `path` (see the file comment); throws
  /// std::runtime_error naming the file and what is wrong.
  static SafeTensorsFile open(const std::string &path);

  SafeTensorsFile(SafeTensorsFile &&other) noexcept;
  SafeTensorsFile &operator=(SafeTensorsFile &&other) noexcept;
  SafeTensorsFile(const SafeTensorsFile &) = delete;
  SafeTensorsFile &operator=(const SafeTensorsFile &) = delete;
  ~SafeTensorsFile();

  const std::string &path() const { return filePath; }
  /// The tensors in the order of their data.
  const std::vector<TensorEntry> &entries() const { return tensors; }
  const std::map<std::string, std::string> &metadata() const { return meta; }
  /// The entry `name`, or null.
  const TensorEntry *find(const std::string &name) const;
  /// Writes the numElements(shape) values of tensor `name` to `out` as f32;
  /// throws std::runtime_error when the file has no such tensor or its
  /// dtype does not convert (convertsToF32).
  void read(const std::string &name, float *out) const;
  /// The bytes tensor `name` occupies in the file (its data_offsets
  /// range), as stored; throws std::runtime_error when it has no such
  /// tensor.
  std::string_view bytes(const std::string &name) const;
  /// The SHA-256 (hex) of bytes(`name`).
  std::string sha256(const std::string &name) const;

private:
  SafeTensorsFile() = default;

  std::string filePath;
  MappedFile mapped;
  std::vector<TensorEntry> tensors;
  /// Per name: its index in `tensors` and its first byte in the mapping.
  std::map<std::string, std::pair<size_t, size_t>> located;
  std::map<std::string, std::string> meta;
};

} // namespace pp::runtime

#endif // PP_RUNTIME_SAFETENSORS_H

//===- ArchiveChecks.h - a TorchScript archive's bytes are whole -*- C++ -*-===//
//
// What LibTorch 1.13 does not check when it loads a `.pt`: its
// PyTorchStreamReader reads zip entries with miniz built with
// MINIZ_DISABLE_ZIP_READER_CRC32_CHECKS, so a corrupt entry loads; and its
// unpickler gives each tensor the offset, sizes and strides data.pkl names
// whatever its storage holds, so a storage cut short puts heap bytes in the
// tensor, and an empty one a null data pointer; and its unpickler
// allocates what a pickle's lengths claim (PickleChecks.h). These checks
// run before the importer reads any value.
//
//===----------------------------------------------------------------------===//

#ifndef PP_FRONTENDS_TORCHSCRIPT_ARCHIVECHECKS_H
#define PP_FRONTENDS_TORCHSCRIPT_ARCHIVECHECKS_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <caffe2/serialize/file_adapter.h>
#include <torch/script.h>

#include <optional>
#include <string>

namespace pp::torchscript_frontend {

/// Checks the CRC-32 of every entry of the zip archive at `path` against its
/// central directory, streaming the entries' bytes (stored or deflated),
/// and the lengths the stored pickles (`*.pkl`) claim against their bytes
/// (PickleChecks.h). Returns what is wrong with the `kind` (`TorchScript archive`), naming the
/// entry and ending in `remedy` (`save the module again with
/// torch.jit.save, or copy it again`), or "" when every entry is whole or
/// the file is no zip archive (LibTorch reports that).
std::string checkZipEntries(llvm::StringRef path, llvm::StringRef kind,
                            llvm::StringRef remedy);

/// The reader torch::jit::load reads an archive with, remembering how many
/// bytes it read into each buffer: miniz reads a stored zip entry, such as
/// a tensor storage's record, straight into the buffer LibTorch allocated
/// for it, so this tells each storage's bytes in the file.
class RecordingReader : public caffe2::serialize::ReadAdapterInterface {
public:
  explicit RecordingReader(const std::string &path) : file(path) {}
  size_t size() const override { return file.size(); }
  size_t read(uint64_t pos, void *buf, size_t n,
              const char *what = "") const override;
  /// The bytes read into the buffer at `data`, or nullopt when none were.
  std::optional<uint64_t> bytesReadInto(const void *data) const;

private:
  caffe2::serialize::FileAdapter file;
  mutable llvm::DenseMap<const void *, uint64_t> reads;
};

/// Checks that `tensor`'s extent (its offset, sizes and strides times its
/// element size) lies within its storage's bytes: those the archive holds
/// for it (`reader` read them), which data.pkl may claim more of. Returns
/// what is wrong, naming the tensor `what`, or "".
std::string checkTensorExtent(const at::Tensor &tensor, llvm::StringRef what,
                              const RecordingReader &reader);

/// checkTensorExtent on every tensor `module` (which `reader` loaded) holds:
/// its attributes and theirs, through submodules, lists, tuples and dicts,
/// named by their attribute paths (`blocks.0.attn.qkv.weight`), and the
/// tensor constants of its code, named by their positions. Returns the
/// first error.
std::string checkModuleTensors(const torch::jit::Module &module,
                               const RecordingReader &reader);

} // namespace pp::torchscript_frontend

#endif // PP_FRONTENDS_TORCHSCRIPT_ARCHIVECHECKS_H

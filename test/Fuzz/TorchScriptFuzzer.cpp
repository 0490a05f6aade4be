//===- TorchScriptFuzzer.cpp - fuzzes the TorchScript importer ------------===//
//
// Imports each input as a TorchScript archive (`fuzz.pt`) through the
// importer plugin, as pp-opt and pp-run do, with the forward arguments the
// seeds take (x and y 2x3xf32, tokens 2x3xi64; batch size 2). A bad archive
// must end in diagnostics: pp's checks of the zip entries' CRC-32s and of
// the tensors' extents, LibTorch's errors (c10::Error, which the importer
// turns into diagnostics) or the importer's own.
//
// Most mutations of an entry would break its CRC-32 and stop at pp's
// check, so under libFuzzer every other mutation is followed by rewriting
// the CRC-32s of the stored entries (torch.jit.save stores every record
// uncompressed) to those of their mutated bytes: those inputs reach
// LibTorch's unpickler, its code parser and the importer.
//
//===----------------------------------------------------------------------===//

#include "test/Fuzz/FuzzSupport.h"

#include "dialects/nn/IR/NNDialect.h"
#include "dialects/pp/IR/PPDialect.h"
#include "frontends/torchscript/TorchScriptImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <zlib.h>

#include <cstring>

/// libFuzzer's mutator (null without libFuzzer, where nothing calls the
/// custom mutator below).
extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize)
    __attribute__((weak));

namespace {

/// The little-endian uint16 or uint32 at `at`.
uint32_t read16(const uint8_t *at) { return at[0] | at[1] << 8; }
uint32_t read32(const uint8_t *at) {
  return read16(at) | static_cast<uint32_t>(read16(at + 2)) << 16;
}
void write32(uint8_t *at, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    at[i] = static_cast<uint8_t>(value >> (8 * i));
}

/// Sets the CRC-32 of every stored entry of the zip archive of `size`
/// bytes at `data` (no zip64) that lies within it, in its central
/// directory entry and its local header, to that of its bytes.
void fixStoredCrcs(uint8_t *data, size_t size) {
  constexpr size_t kEndBytes = 22, kCentralBytes = 46, kLocalBytes = 30;
  size_t end = size < kEndBytes ? 0 : size - kEndBytes + 1;
  while (end > 0 && read32(data + end - 1) != 0x06054b50)
    --end;
  if (end-- == 0)
    return;
  size_t entries = read16(data + end + 10);
  size_t at = read32(data + end + 16);
  for (; entries > 0 && at <= end && end - at >= kCentralBytes; --entries) {
    uint8_t *central = data + at;
    if (read32(central) != 0x02014b50)
      return;
    at += kCentralBytes + read16(central + 28) + read16(central + 30) +
          read16(central + 32);
    size_t local = read32(central + 42);
    size_t bytes = read32(central + 20);
    if (read16(central + 10) != 0 || bytes != read32(central + 24) ||
        local > size || size - local < kLocalBytes)
      continue;
    uint8_t *header = data + local;
    size_t start = local + kLocalBytes + read16(header + 26) +
                   read16(header + 28);
    if (start > size || size - start < bytes)
      continue;
    uint32_t crc = static_cast<uint32_t>(
        ::crc32(0, data + start, static_cast<uInt>(bytes)));
    write32(central + 16, crc);
    write32(header + 14, crc);
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  size = LLVMFuzzerMutate(data, size, maxSize);
  if (seed % 2 == 0)
    fixStoredCrcs(data, size);
  return size;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const pp::fuzz::ScratchDirectory scratch;
  std::string path = scratch.write("fuzz.pt", data, size);
  // A fresh context per import, as in OnnxFuzzer.cpp: the parameters of
  // every module imported into one context would pile up in its blobs.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  // The plugin uses this program's dialects (loading them here links them
  // in).
  context.loadDialect<pp::nn::NNDialect, pp::PPDialect>();
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {});
  pp::torchscript_frontend::ImportOptions options;
  options.batchSize = 2;
  options.inputTypes = {
      {"x", "2x3xf32"}, {"y", "2x3xf32"}, {"tokens", "2x3xi64"}};
  pp::torchscript_frontend::importTorchScriptFile(path, &context, options);
  return 0;
}

//===- PickleChecks.cpp - a pickle's lengths fit its record ---------------===//
//
// The opcodes and their arguments are those of CPython's pickletools.
//
//===----------------------------------------------------------------------===//

#include "frontends/torchscript/PickleChecks.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

using namespace llvm;

namespace pp::torchscript_frontend {
namespace {

/// How an opcode's argument is laid out.
enum class Argument {
  /// An opcode pickle does not define.
  Unknown,
  /// A fixed number of bytes (possibly none).
  Fixed,
  /// A little-endian length of `size` bytes, then that many bytes.
  Counted,
  /// `size` lines ending in '\n'.
  Lines,
};

/// The layout of `opcode`'s argument and its `size`.
std::pair<Argument, unsigned> argumentOf(uint8_t opcode) {
  switch (opcode) {
  case 'K': case 'h': case 'q': case 0x80: case 0x82:
    return {Argument::Fixed, 1};
  case 'M': case 0x83:
    return {Argument::Fixed, 2};
  case 'J': case 'j': case 'r': case 0x84:
    return {Argument::Fixed, 4};
  case 'G': case 0x95:
    return {Argument::Fixed, 8};
  case 'U': case 'C': case 0x8c: case 0x8a:
    return {Argument::Counted, 1};
  case 'T': case 'B': case 'X': case 0x8b:
    return {Argument::Counted, 4};
  case 0x8d: case 0x8e: case 0x96:
    return {Argument::Counted, 8};
  case 'I': case 'L': case 'S': case 'V': case 'F': case 'P': case 'g':
  case 'p':
    return {Argument::Lines, 1};
  case 'c': case 'i':
    return {Argument::Lines, 2};
  case '(': case '.': case '0': case '1': case '2': case 'N': case 0x88:
  case 0x89: case ']': case 'a': case 'e': case 'l': case ')': case 't':
  case 0x85: case 0x86: case 0x87: case '}': case 'd': case 's': case 'u':
  case 0x8f: case 0x90: case 0x91: case 'R': case 'b': case 'o': case 0x81:
  case 0x92: case 0x93: case 0x94: case 'Q': case 0x97: case 0x98:
    return {Argument::Fixed, 0};
  default:
    return {Argument::Unknown, 0};
  }
}

/// The little-endian length of `size` bytes at `at`.
uint64_t lengthAt(const char *at, unsigned size) {
  uint64_t length = 0;
  for (unsigned i = 0; i < size; ++i)
    length |= static_cast<uint64_t>(static_cast<uint8_t>(at[i])) << (8 * i);
  return length;
}

} // namespace

std::string checkPickleLengths(StringRef pickle) {
  size_t at = 0;
  while (at < pickle.size()) {
    uint8_t opcode = static_cast<uint8_t>(pickle[at]);
    auto [argument, size] = argumentOf(opcode);
    if (argument == Argument::Unknown || opcode == '.')
      return "";
    size_t start = at;
    auto pastEnd = [&](uint64_t claimed) {
      return "its opcode " + (isPrint(opcode) ? "'" + std::string(1, opcode) +
                                                    "'"
                                              : "0x" + utohexstr(opcode)) +
             " at byte " + std::to_string(start) + " claims " +
             std::to_string(claimed) + " bytes, past the end of its " +
             std::to_string(pickle.size());
    };
    at += 1;
    if (argument == Argument::Lines) {
      for (unsigned line = 0; line < size; ++line) {
        size_t end = pickle.find('\n', at);
        if (end == StringRef::npos)
          return pastEnd(pickle.size() - start);
        at = end + 1;
      }
      continue;
    }
    size_t left = pickle.size() - at;
    if (left < size)
      return pastEnd(size);
    uint64_t bytes = size;
    if (argument == Argument::Counted) {
      uint64_t length = lengthAt(pickle.data() + at, size);
      if (length > left - size)
        return pastEnd(length);
      bytes += length;
    }
    at += bytes;
  }
  return "";
}

} // namespace pp::torchscript_frontend

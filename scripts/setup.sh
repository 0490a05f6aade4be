#!/usr/bin/env bash
# Installs every Debian package pp needs to build, test and run.
# Non-interactive and idempotent: run as root on a fresh Debian 12 machine.
# Usage: scripts/setup.sh
set -euo pipefail

PACKAGES=(
  # Toolchain.
  build-essential cmake ninja-build ccache pkg-config git python3
  # MLIR/LLVM 22: headers, shared libraries, mlir-tblgen, lit, FileCheck, not.
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # Frontends: ONNX (+ protobuf) and TorchScript (LibTorch).
  libonnx-dev libprotobuf-dev protobuf-compiler libtorch-dev
  # Runtime: GEMM engines (OpenBLAS, oneDNN, BLIS's OpenMP flavour), JSON,
  # hashing and the job secret's HMAC.
  libopenblas-dev libdnnl-dev libblis-dev libblis-openmp-dev
  nlohmann-json3-dev libssl-dev
  # Tokenizers (pp-data pack --tokenizer): Unicode regexes, SentencePiece,
  # Unicode normal forms.
  libpcre2-dev libsentencepiece-dev libicu-dev
  # Tests and benchmarks; iproute2's `ip` makes the network namespaces the
  # multi-node tests run their hosts in (test/E2E/network_hosts.py).
  libgtest-dev libgmock-dev libbenchmark-dev python3-onnx python3-numpy
  iproute2
  # The fuzz campaign (scripts/fuzz.sh, which CI runs): clang 22 with
  # libFuzzer and the sanitizer runtimes, and its OpenMP.
  clang-22 libclang-rt-22-dev libomp-22-dev
  # Transformer fixtures (test/models/*.py) and ONNX's backend node tests.
  python3-torch libonnx-testdata
)
if [ "$#" -ne 0 ]; then
  echo "usage: scripts/setup.sh" >&2
  exit 2
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: installing ${missing[*]} needs root; rerun as root or with sudo" >&2
  exit 1
fi

echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Installs the Debian packages caffe-iwp builds and runs with. Idempotent: when every
# package is already installed it does nothing (no apt-get at all).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libprotobuf-dev protobuf-compiler
  libgoogle-glog-dev libgflags-dev libgtest-dev
  libopenblas-dev libopenblas0-openmp liblmdb-dev zlib1g-dev libhdf5-dev
  libopenmpi-dev openmpi-bin
  libdnnl-dev
  libopencv-dev
  dataset-fashion-mnist
  python3-matplotlib
  pybind11-dev python3-dev python3-numpy python3-protobuf python3-pytest python3-h5py
  python3-pil python3-pydot graphviz
  clang clang-format
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup_deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

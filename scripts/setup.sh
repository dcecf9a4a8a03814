#!/usr/bin/env bash
# Installs the Debian packages Thunder Viz needs (only those missing), then configures and builds
# into build/. Safe to run again: it installs nothing when everything is there and rebuilds only
# what changed. CUDA and NCCL parts are built when /usr/local/cuda has nvcc and NCCL.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev python3-torch python3-torchvision libgloo-dev
  libimgui-dev libglfw3-dev libgl-dev mesa-utils libgl1-mesa-dri xvfb xauth xdotool
  pybind11-dev python3-dev python3-pytest python3-numpy
  libgtest-dev nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev libstb-dev libdtl-dev libdnnl-dev python3-jsonschema
  fonts-dejavu-core
)
scripts/apt_install.sh setup "${packages[@]}"

cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cmake_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90)
fi
cmake -S . -B build "${cmake_args[@]}" "$@" >/dev/null
ninja -C build

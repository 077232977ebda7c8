#!/usr/bin/env bash
# Installs the Debian 12 packages dtsim needs to build and test. Idempotent:
# packages already present are left alone, and apt is only called when
# something is missing. Run as root (or through sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libboost-graph-dev libeigen3-dev libyaml-cpp-dev nlohmann-json3-dev
  libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsimgrid-dev libopenmpi-dev openmpi-bin libprotobuf-dev protobuf-compiler zlib1g-dev
  # Tests only: ONNX's own generated classes write a test model that dtsim's
  # importer reads (models/onnx_fixture_writer.cc); a headless browser opens
  # the sweep page (report/sweep_page_test.cc); Fashion-MNIST's IDX files are
  # the real data exec trains on (exec/data/idx_dataset_test.cc, cli_test).
  libonnx-dev chromium dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "setup: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

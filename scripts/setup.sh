#!/usr/bin/env bash
# Installs the Debian 12 packages dtsim needs. Idempotent: packages already
# present are left alone, and apt is only called when something is missing.
# Run as root (or through sudo).
#
#   scripts/setup.sh         what building and testing everything needs
#                            (scripts/test.sh)
#   scripts/setup.sh --run   only what building the dtsim binary needs
#                            (scripts/run.sh): no test libraries, ONNX,
#                            browser or datasets
set -euo pipefail

# Building dtsim (cmake/DtsimDependencies.cmake).
run_packages=(
  build-essential cmake pkg-config
  libboost-graph-dev libeigen3-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libsimgrid-dev libopenmpi-dev openmpi-bin libprotobuf-dev protobuf-compiler zlib1g-dev
  python3-dev python3-pybind11
)
# Tests and benchmarks only: GoogleTest and Google Benchmark; ONNX's own
# generated classes write a test model that dtsim's importer reads
# (models/onnx_fixture_writer.cc); a headless browser opens the sweep page
# (report/sweep_page_test.cc); Fashion-MNIST's IDX files are the real data
# exec trains on (exec/data/idx_dataset_test.cc, cli_test).
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev chromium dataset-fashion-mnist
)

case "${1:-}" in
  --run) packages=("${run_packages[@]}") ;;
  "") packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [--run]" >&2; exit 2 ;;
esac

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

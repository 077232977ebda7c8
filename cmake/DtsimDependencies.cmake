# Finds every dependency dtsim needs. All come from Debian 12 packages
# (scripts/setup.sh installs them); a missing one stops the configure step
# with the package to install.

function(dtsim_require found pkg what)
  if(NOT ${found})
    message(FATAL_ERROR "dtsim needs ${what}: install the Debian package '${pkg}' "
                        "(scripts/setup.sh installs everything).")
  endif()
endfunction()

find_package(Boost 1.74 COMPONENTS graph QUIET)
dtsim_require(Boost_FOUND libboost-graph-dev "Boost.Graph")
find_package(Eigen3 3.4 QUIET NO_MODULE)
dtsim_require(Eigen3_FOUND libeigen3-dev "Eigen")
find_package(yaml-cpp QUIET)
dtsim_require(yaml-cpp_FOUND libyaml-cpp-dev "yaml-cpp")
find_package(nlohmann_json 3.10 QUIET)
dtsim_require(nlohmann_json_FOUND nlohmann-json3-dev "nlohmann-json")
find_package(CLI11 QUIET)
dtsim_require(CLI11_FOUND libcli11-dev "CLI11")
# Protocol buffers: the TensorBoard event files (report/tensorboard_event.proto).
find_package(Protobuf QUIET)
dtsim_require(Protobuf_FOUND "libprotobuf-dev protobuf-compiler" "Protocol Buffers")
# zlib: gzip-compressed Chakra traces (plan/chakra_files.h).
find_package(ZLIB QUIET)
dtsim_require(ZLIB_FOUND zlib1g-dev "zlib")
find_package(MPI QUIET COMPONENTS CXX)
dtsim_require(MPI_CXX_FOUND libopenmpi-dev "OpenMPI")
find_package(PkgConfig QUIET)
dtsim_require(PKG_CONFIG_FOUND pkg-config "pkg-config")
# SimGrid's Debian package ships no CMake package, only a pkg-config module.
pkg_check_modules(SIMGRID QUIET IMPORTED_TARGET simgrid>=3.32)
dtsim_require(SIMGRID_FOUND libsimgrid-dev "SimGrid (pkg-config module 'simgrid')")
# The Python module (python/): the interpreter python3 finds first and its
# headers, and pybind11.
find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
dtsim_require(Python_FOUND python3-dev "Python's headers (Python.h)")
set(PYBIND11_FINDPYTHON ON)
find_package(pybind11 2.6 CONFIG QUIET)
dtsim_require(pybind11_FOUND python3-pybind11 "pybind11")

if(DTSIM_BUILD_TESTS)
  find_package(GTest QUIET)
  dtsim_require(GTest_FOUND libgtest-dev "GoogleTest")
endif()
if(DTSIM_BUILD_BENCH)
  find_package(benchmark QUIET)
  dtsim_require(benchmark_FOUND libbenchmark-dev "Google Benchmark")
endif()

# CUDA is optional. Debian's CUDA packages are not used: the toolkit is looked
# for in /usr/local/cuda as NVIDIA installs it.
set(DTSIM_HAVE_CUDA OFF)
if(NOT DTSIM_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(DTSIM_HAVE_CUDA ON)
  elseif(DTSIM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DTSIM_CUDA=ON but no CUDA compiler was found. Install the CUDA "
                        "Toolkit in /usr/local/cuda, set CMAKE_CUDA_COMPILER, or "
                        "configure with -DDTSIM_CUDA=OFF.")
  else()
    message(STATUS "dtsim: no CUDA compiler found, CUDA sources are not built")
  endif()
endif()

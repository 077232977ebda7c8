# Sanitized builds (docs/fuzzing.md).
#
# DTSIM_SANITIZE=ON builds everything with AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC 12's libasan/libubsan come with Debian's
# gcc; clang works too). Undefined behaviour aborts the test instead of
# printing and going on (-fno-sanitize-recover), so a report fails the test.
# float-cast-overflow is not part of GCC's -fsanitize=undefined: a double out
# of an integer's range converted to it (a bandwidth of 1e-300 bps turned
# into nanoseconds) is exactly the kind of bug the loaders must refuse.
#
# DTSIM_FUZZ=ON (clang only) builds every dtsim library with libFuzzer's
# coverage instrumentation plus ASan and UBSan, and the fuzz targets of fuzz/
# as libFuzzer programs; scripts/fuzz.sh configures it.
option(DTSIM_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(DTSIM_FUZZ "Build the libFuzzer targets of fuzz/ (needs clang)" OFF)

set(DTSIM_SANITIZER_FLAGS
    -fsanitize=address,undefined,float-cast-overflow
    -fno-sanitize-recover=all
    -fno-omit-frame-pointer)

if(DTSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DTSIM_FUZZ=ON needs clang's libFuzzer: configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-16 (Debian packages clang-16 and "
                        "libclang-rt-16-dev; scripts/fuzz.sh installs and configures them)")
  endif()
  # Libraries get coverage instrumentation without libFuzzer's main();
  # fuzz/CMakeLists.txt links the targets with -fsanitize=fuzzer.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link;${DTSIM_SANITIZER_FLAGS}>")
  add_link_options(${DTSIM_SANITIZER_FLAGS})
elseif(DTSIM_SANITIZE)
  # C++ only: nvcc (exec/cuda) does not take these flags.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${DTSIM_SANITIZER_FLAGS}>")
  add_link_options(${DTSIM_SANITIZER_FLAGS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC manual, Instrumentation Options: "sanitizers tend to increase the
    # rate of false positive warnings, most notably those around
    # -Wmaybe-uninitialized. We recommend against combining -Werror and [the
    # use of] sanitizers." Seen here on boost::optional in Boost.Graph's
    # named_graph.hpp at -O1. The plain build keeps the warning (an error in
    # CI); the sanitized build is for run-time reports.
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  endif()
endif()

# Every sanitized test program and the dtsim binary carry the runtime
# options they need (cmake/sanitizer_options.cc: abort on the first report,
# leak checks on, with the suppressions for leaks inside OpenMPI and
# SimGrid), so a test behaves the same under ctest, run by hand or as an MPI
# rank. ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS still override them.
# MPI programs pass MPI: their leak reports need full stacks (see
# sanitizer_options.cc).
function(dtsim_sanitizer_options target)
  if(DTSIM_SANITIZE OR DTSIM_FUZZ)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/sanitizer_options.cc)
    if("MPI" IN_LIST ARGN)
      target_compile_definitions(${target} PRIVATE DTSIM_SANITIZER_MPI_PROGRAM)
    endif()
  endif()
endfunction()

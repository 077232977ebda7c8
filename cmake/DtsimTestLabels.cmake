# The labels of every test (docs/testing.md). Each test carries its program's
# name, so `ctest -L '^config_test$'` runs one program, and its kinds:
#   unit  a test of one layer's code, beside it in the layer's folder (the
#         fuzz corpora's replays included)
#   e2e   a cross-module or end-to-end test (tests/: the dtsim binary on the
#         shipped scenarios, the figures docs quote against the simulator)
#   mpi   its processes are MPI ranks (dtsim_mpi_test), or it starts mpirun
#         (dtsim exec, calibrate or sweep over more than one rank)
#   gpu   a test of the CUDA code (it skips where no GPU is visible)
#   slow  over about 2 s on 2 cores (scripts/test_times.py --over 2)
# scripts/test.sh --fast runs every test but slow and mpi ones (and gpu ones
# where no GPU is visible). A test that becomes slow, or a new one that is,
# is added to DTSIM_SLOW_TESTS_<program> below; a name listed here that no
# longer exists only sets a property nobody reads.

set(DTSIM_E2E_TEST_PROGRAMS cli_test tta_test docs_test bounds_cli_test chakra_fixtures_test
    python_module_test)
set(DTSIM_GPU_TEST_PROGRAMS cuda_backend_test nccl_communicator_test)
include(DtsimSlowTests)

# dtsim_test_labels(PROGRAM TEST OUT_VAR): the labels of test TEST of
# PROGRAM, for tests registered with add_test (one per command line).
function(dtsim_test_labels program test out_var)
  dtsim_program_labels(${program} labels)
  if(test IN_LIST DTSIM_SLOW_TESTS_${program})
    list(APPEND labels slow)
  endif()
  if(test IN_LIST DTSIM_MPI_TESTS_${program})
    list(APPEND labels mpi)
  endif()
  set(${out_var} ${labels} PARENT_SCOPE)
endfunction()

# dtsim_gtest_labels(PROGRAM): labels the tests gtest_discover_tests found in
# GoogleTest program PROGRAM (call it after gtest_discover_tests(PROGRAM
# TEST_LIST PROGRAM_TESTS ...)), through a file ctest reads after the
# discovered tests (written here, in the program's build folder). The labels
# cannot go through gtest_discover_tests' PROPERTIES: CMake 3.25's discovery
# script splits a list value into separate arguments.
function(dtsim_gtest_labels program)
  dtsim_program_labels(${program} labels)
  string(CONCAT content
         "# Written by cmake/DtsimTestLabels.cmake: the labels of ${program}'s tests.\n"
         "if(${program}_TESTS)\n"
         "  set_tests_properties(\${${program}_TESTS} PROPERTIES LABELS \"${labels}\")\n"
         "endif()\n")
  set(listed ${DTSIM_SLOW_TESTS_${program}} ${DTSIM_MPI_TESTS_${program}})
  list(REMOVE_DUPLICATES listed)
  foreach(test IN LISTS listed)
    dtsim_test_labels(${program} ${test} test_labels)
    string(APPEND content
           "set_tests_properties([==[${test}]==] PROPERTIES LABELS \"${test_labels}\")\n")
  endforeach()
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${program}_labels.cmake)
  file(CONFIGURE OUTPUT ${file} CONTENT "${content}" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()

# dtsim_program_labels(PROGRAM OUT_VAR): the labels of every test of
# PROGRAM: its name, unit or e2e, and gpu for the CUDA code's.
function(dtsim_program_labels program out_var)
  if(program IN_LIST DTSIM_E2E_TEST_PROGRAMS)
    set(labels ${program} e2e)
  else()
    set(labels ${program} unit)
  endif()
  if(program IN_LIST DTSIM_GPU_TEST_PROGRAMS)
    list(APPEND labels gpu)
  endif()
  set(${out_var} ${labels} PARENT_SCOPE)
endfunction()

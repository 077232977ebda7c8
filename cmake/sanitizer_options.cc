// Default run-time options of the sanitizers, compiled into every program of
// a sanitized build (-DDTSIM_SANITIZE=ON; cmake/DtsimSanitizers.cmake). The
// runtimes call these hooks before reading ASAN_OPTIONS, UBSAN_OPTIONS and
// LSAN_OPTIONS, which still override them. Options: the sanitizer
// documentation, https://github.com/google/sanitizers/wiki/SanitizerCommonFlags
// and https://github.com/google/sanitizers/wiki/AddressSanitizerFlags.

extern "C" {

// Any report ends the program with an error, so a test that triggers one
// fails instead of printing and passing. MPI programs record allocation
// stacks with the slow, complete unwinder: OpenMPI's libraries have no frame
// pointers, so the fast unwinder stops inside them and a leak's stack would
// not show the MPI_Init or MPI_Finalize it came from, which the suppressions
// below match.
__attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "detect_leaks=1:abort_on_error=1:strict_string_checks=1:"
         "check_initialization_order=1:detect_stack_use_after_return=1"
#ifdef DTSIM_SANITIZER_MPI_PROGRAM
         ":fast_unwind_on_malloc=0"
#endif
      ;
}

__attribute__((visibility("default"), used)) const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1";
}

__attribute__((visibility("default"), used)) const char* __lsan_default_options() {
  return "print_suppressions=0";
}

// Leaks to ignore: a report is dropped when a frame of its allocation stack
// is in one of these libraries. A line here names a library dtsim uses,
// never dtsim code. The loader, sim (SimGrid included) and report tests and
// the fuzz replays need none.
//  - Open MPI 4.1.4 (Debian 12) does not free everything MPI_Init allocates:
//    every one of the 52 leak reports of comm_test (np 1) has frames in
//    these libraries, reached from MPI_Init or MPI_Finalize
//    (exec/comm/mpi_session.cc); none is reached without them. Open MPI's
//    FAQ ("Is Open MPI 'Valgrind-clean'?") says it is not and ships
//    suppressions for it (openmpi-valgrind.supp).
//  - With 2 or more ranks, Open MPI's progress thread also leaves small
//    blocks (32 to 96 bytes) allocated under libevent's event_base_loop,
//    through its MCA plugins (unloaded by exit, so their frames show as
//    "<unknown module>"). Only Open MPI uses libevent in dtsim.
__attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\n"
         "leak:libopen-rte.so\n"
         "leak:libopen-pal.so\n"
         "leak:libevent_core-2.1.so\n";
}

}  // extern "C"

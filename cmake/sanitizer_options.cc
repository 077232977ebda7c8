// Default run-time options of the sanitizers, compiled into every program of
// a sanitized build (-DDTSIM_SANITIZE=ON; cmake/DtsimSanitizers.cmake). The
// runtimes call these hooks before reading ASAN_OPTIONS, UBSAN_OPTIONS and
// LSAN_OPTIONS, which still override them. Options: the sanitizer
// documentation, https://github.com/google/sanitizers/wiki/SanitizerCommonFlags
// and https://github.com/google/sanitizers/wiki/AddressSanitizerFlags.

extern "C" {

// Any report ends the program with an error, so a test that triggers one
// fails instead of printing and passing.
__attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "detect_leaks=1:abort_on_error=1:strict_string_checks=1:"
         "check_initialization_order=1:detect_stack_use_after_return=1";
}

__attribute__((visibility("default"), used)) const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1";
}

__attribute__((visibility("default"), used)) const char* __lsan_default_options() {
  return "print_suppressions=0";
}

// Leaks to ignore, one "leak:<function or library>" line each with its
// reason. None so far: the loader, sim (SimGrid included) and report tests
// and the fuzz replays run clean under LeakSanitizer. A line here must name
// a frame inside a library (libmpi, libsimgrid), never dtsim code.
__attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "";
}

}  // extern "C"

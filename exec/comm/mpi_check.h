// Every MPI call goes through DTSIM_MPI_CHECK, which turns a failing return
// code into an MpiError naming the call, file and line. MpiSession sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD (sub-communicators inherit it), so
// failures come back as codes instead of aborting the job.
#pragma once

#include <stdexcept>
#include <string>

namespace dtsim::exec {

class MpiError : public std::runtime_error {
 public:
  MpiError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  // The MPI error code the call returned.
  int code() const { return code_; }

 private:
  int code_;
};

// Throws MpiError "file:line: MPI error <code> (<MPI's message>) in <expr>".
[[noreturn]] void ThrowMpiError(int code, const char* expr, const char* file, int line);

}  // namespace dtsim::exec

#define DTSIM_MPI_CHECK(call)                                                    \
  do {                                                                           \
    const int dtsim_mpi_status = (call);                                         \
    if (dtsim_mpi_status != MPI_SUCCESS)                                         \
      ::dtsim::exec::ThrowMpiError(dtsim_mpi_status, #call, __FILE__, __LINE__); \
  } while (0)

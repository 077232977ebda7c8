#include "exec/comm/mpi_check.h"

#include <mpi.h>

namespace dtsim::exec {

void ThrowMpiError(int code, const char* expr, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  // Appended piece by piece: GCC 12 reports a false -Wrestrict on
  // `std::string + ":" + ...` chains.
  std::string what = file;
  what += ':';
  what += std::to_string(line);
  what += ": MPI error ";
  what += std::to_string(code);
  what += " (";
  what.append(text, static_cast<std::size_t>(length));
  what += ") in ";
  what += expr;
  throw MpiError(code, what);
}

}  // namespace dtsim::exec

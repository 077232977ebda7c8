// main() of GoogleTest programs that run as MPI ranks (mpirun -np N test):
// MPI starts first; only rank 0 prints GoogleTest's report, other ranks
// print just their failed assertions, tagged with their rank; the exit
// status is non-zero when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <exception>

#include "exec/comm/mpi_check.h"
#include "exec/comm/mpi_session.h"

namespace dtsim::exec {
namespace {

// Prints failed assertions (only) with the rank, for ranks other than 0.
class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::printf("[rank %d] %s:%d: Failure\n%s\n", rank_,
                result.file_name() ? result.file_name() : "?", result.line_number(),
                result.summary());
    std::fflush(stdout);
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace dtsim::exec

int main(int argc, char** argv) {
  try {
    dtsim::exec::MpiSession session(&argc, &argv);
    testing::InitGoogleTest(&argc, argv);
    if (session.world_rank() != 0) {
      testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new dtsim::exec::FailurePrinter(session.world_rank()));
    }
    const int failed_here = RUN_ALL_TESTS() != 0 ? 1 : 0;
    int failed_anywhere = 0;
    DTSIM_MPI_CHECK(MPI_Allreduce(&failed_here, &failed_anywhere, 1, MPI_INT, MPI_MAX,
                                  MPI_COMM_WORLD));
    if (session.world_rank() == 0 && failed_anywhere && !failed_here)
      std::printf("FAILED on another rank (see its [rank N] lines)\n");
    return failed_anywhere;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argc > 0 ? argv[0] : "mpi test", e.what());
    return 1;
  }
}

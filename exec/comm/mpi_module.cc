// libdtsim-mpi.so: MPI for dtsim (exec/comm/mpi_world.h). Loaded by the
// dtsim processes an MPI launcher starts; exports one symbol.
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "exec/comm/mpi_check.h"
#include "exec/comm/mpi_communicator.h"
#include "exec/comm/mpi_session.h"
#include "exec/comm/mpi_world.h"

namespace dtsim::exec {
namespace {

class World final : public MpiWorld {
 public:
  World() : session_(nullptr, nullptr), communicator_(std::make_unique<MpiCommunicator>()) {}

  Communicator& communicator() override { return *communicator_; }
  void Abort(int status) override { session_.Abort(status); }

  std::vector<std::string> GatherToRoot(const std::string& mine) override {
    if (mine.size() > static_cast<std::size_t>(INT_MAX))
      throw UserError("GatherToRoot: more than 2 GiB from one rank");
    const int ranks = session_.world_size();
    const int rank = session_.world_rank();
    const int size = static_cast<int>(mine.size());
    std::vector<int> sizes(static_cast<std::size_t>(ranks), 0);
    DTSIM_MPI_CHECK(MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
    std::vector<int> offsets(static_cast<std::size_t>(ranks), 0);
    std::int64_t total = 0;
    for (int r = 0; r < ranks; ++r) {
      offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += sizes[static_cast<std::size_t>(r)];
    }
    if (rank == 0 && total > INT_MAX) throw UserError("GatherToRoot: more than 2 GiB in all");
    std::string all(rank == 0 ? static_cast<std::size_t>(total) : 0, '\0');
    DTSIM_MPI_CHECK(MPI_Gatherv(mine.data(), size, MPI_BYTE, all.data(), sizes.data(),
                                offsets.data(), MPI_BYTE, 0, MPI_COMM_WORLD));
    std::vector<std::string> out;
    if (rank != 0) return out;
    for (int r = 0; r < ranks; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)])));
    return out;
  }

 private:
  // Declared first: destroyed last, after the communicator.
  MpiSession session_;
  std::unique_ptr<MpiCommunicator> communicator_;
};

}  // namespace
}  // namespace dtsim::exec

extern "C" __attribute__((visibility("default"))) dtsim::exec::MpiWorld*
dtsim_mpi_module_start_v2() {
  return new dtsim::exec::World();
}

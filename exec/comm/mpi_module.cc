// libdtsim-mpi.so: MPI for dtsim (exec/comm/mpi_world.h). Loaded by the
// dtsim processes an MPI launcher starts; exports one symbol.
#include <memory>

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

 private:
  // Declared first: destroyed last, after the communicator.
  MpiSession session_;
  std::unique_ptr<MpiCommunicator> communicator_;
};

}  // namespace
}  // namespace dtsim::exec

extern "C" __attribute__((visibility("default"))) dtsim::exec::MpiWorld*
dtsim_mpi_module_start_v1() {
  return new dtsim::exec::World();
}

#include "exec/comm/solo_communicator.h"

#include "common/error.h"

namespace dtsim::exec {

std::unique_ptr<SendRequest::Impl> SoloCommunicator::DoIsend(int, int, const float*,
                                                             std::size_t) {
  DTSIM_CHECK(false, "a world of one rank has no peer to send to");
  return nullptr;
}
void SoloCommunicator::DoSend(int, int, const float*, std::size_t) {
  DTSIM_CHECK(false, "a world of one rank has no peer to send to");
}
void SoloCommunicator::DoRecv(int, int, float*, std::size_t) {
  DTSIM_CHECK(false, "a world of one rank has no peer to receive from");
}
int SoloCommunicator::DoRecvAny(int, float*, std::size_t) {
  DTSIM_CHECK(false, "a world of one rank has no peer to receive from");
  return 0;
}

}  // namespace dtsim::exec

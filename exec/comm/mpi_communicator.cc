#include "exec/comm/mpi_communicator.h"

#include <climits>
#include <string>

#include "common/error.h"
#include "exec/comm/mpi_check.h"

namespace dtsim::exec {

namespace {

int MpiCount(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    std::string message = "MPI message of ";
    message += std::to_string(count);
    message += " floats is too large";
    throw UserError(message, "MPI counts are int: split the buffer below 2^31 elements");
  }
  return static_cast<int>(count);
}

class MpiSendRequest final : public SendRequest::Impl {
 public:
  explicit MpiSendRequest(MPI_Request request) : request_(request) {}
  ~MpiSendRequest() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  MpiSendRequest(const MpiSendRequest&) = delete;
  MpiSendRequest& operator=(const MpiSendRequest&) = delete;

  void Wait() override { DTSIM_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE)); }

 private:
  MPI_Request request_;  // MPI_REQUEST_NULL once complete
};

// Throws unless the received message held exactly `count` floats.
void CheckReceivedCount(const MPI_Status& status, std::size_t count) {
  int received = 0;
  DTSIM_MPI_CHECK(MPI_Get_count(&status, MPI_FLOAT, &received));
  if (received != static_cast<int>(count)) {
    std::string what = "MPI_Recv: expected ";
    what += std::to_string(count);
    what += " floats from rank ";
    what += std::to_string(status.MPI_SOURCE);
    what += ", got ";
    what += std::to_string(received);
    throw MpiError(MPI_ERR_COUNT, what);
  }
}

// Frees an MPI_Group when it goes out of scope.
struct GroupGuard {
  MPI_Group group = MPI_GROUP_NULL;
  GroupGuard() = default;
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;
  ~GroupGuard() {
    if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  }
};

}  // namespace

MpiCommunicator::MpiCommunicator() {
  DTSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  DTSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  for (auto& [group, comm] : group_comms_)
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

std::unique_ptr<SendRequest::Impl> MpiCommunicator::DoIsend(int peer, int tag, const float* data,
                                                            std::size_t count) {
  MPI_Request request = MPI_REQUEST_NULL;
  DTSIM_MPI_CHECK(
      MPI_Isend(data, MpiCount(count), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &request));
  return std::make_unique<MpiSendRequest>(request);
}

void MpiCommunicator::DoSend(int peer, int tag, const float* data, std::size_t count) {
  DTSIM_MPI_CHECK(MPI_Send(data, MpiCount(count), MPI_FLOAT, peer, tag, MPI_COMM_WORLD));
}

void MpiCommunicator::DoRecv(int peer, int tag, float* data, std::size_t count) {
  MPI_Status status;
  DTSIM_MPI_CHECK(
      MPI_Recv(data, MpiCount(count), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &status));
  CheckReceivedCount(status, count);
}

int MpiCommunicator::DoRecvAny(int tag, float* data, std::size_t count) {
  MPI_Status status;
  DTSIM_MPI_CHECK(
      MPI_Recv(data, MpiCount(count), MPI_FLOAT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &status));
  CheckReceivedCount(status, count);
  return status.MPI_SOURCE;
}

void MpiCommunicator::DoBarrier() { DTSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }

void MpiCommunicator::DoNativeAllReduceSum(float* data, std::size_t count,
                                           const std::vector<int>& group) {
  DTSIM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, MpiCount(count), MPI_FLOAT, MPI_SUM,
                                CommFor(group)));
}

MPI_Comm MpiCommunicator::CommFor(const std::vector<int>& group) {
  if (static_cast<int>(group.size()) == size_) return MPI_COMM_WORLD;
  const auto found = group_comms_.find(group);
  if (found != group_comms_.end()) return found->second;
  // Ranks in the new communicator follow `group`'s (increasing) order.
  GroupGuard world, members;
  MPI_Comm comm = MPI_COMM_NULL;
  DTSIM_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world.group));
  DTSIM_MPI_CHECK(MPI_Group_incl(world.group, static_cast<int>(group.size()), group.data(),
                                 &members.group));
  DTSIM_MPI_CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, members.group, kGroupCreateTag, &comm));
  group_comms_.emplace(group, comm);
  return comm;
}

}  // namespace dtsim::exec

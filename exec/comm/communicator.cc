#include "exec/comm/communicator.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"
#include "exec/comm/ring_allreduce.h"
#include "exec/comm/tree_allreduce.h"

namespace dtsim::exec {

const char* AllReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kRing: return "ring";
    case AllReduceAlgorithm::kTree: return "tree";
    case AllReduceAlgorithm::kMpi: return "mpi";
  }
  return "?";
}

AllReduceAlgorithm ParseAllReduceAlgorithm(std::string_view name) {
  for (AllReduceAlgorithm a :
       {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kTree, AllReduceAlgorithm::kMpi})
    if (name == AllReduceAlgorithmName(a)) return a;
  std::string message = "unknown all-reduce algorithm '";
  message += name;
  message += "'";
  throw UserError(message, "use one of: ring, tree, mpi");
}

// ---- SendRequest ----

SendRequest::SendRequest(Communicator* owner, std::unique_ptr<Impl> impl)
    : owner_(owner), impl_(std::move(impl)) {}

SendRequest::SendRequest(SendRequest&& other) noexcept
    : owner_(other.owner_), impl_(std::move(other.impl_)) {}

SendRequest& SendRequest::operator=(SendRequest&& other) noexcept {
  if (this != &other) {
    WaitQuietly();  // the request held until now
    owner_ = other.owner_;
    impl_ = std::move(other.impl_);
  }
  return *this;
}

SendRequest::~SendRequest() { WaitQuietly(); }

void SendRequest::WaitQuietly() noexcept {
  if (impl_ == nullptr) return;
  try {
    Wait();
  } catch (...) {
    // Callers that cannot throw (destructor, move) cannot report it; Wait()
    // is where failures are seen.
  }
  impl_.reset();
}

void SendRequest::Wait() {
  if (impl_ == nullptr) return;
  owner_->WaitTimed(*impl_);
  impl_.reset();
}

// ---- Communicator ----

Communicator::TimedScope::TimedScope(Communicator& comm) : comm_(comm) {
  if (comm_.open_scopes_++ == 0) comm_.scope_start_ = std::chrono::steady_clock::now();
}

Communicator::TimedScope::~TimedScope() {
  if (--comm_.open_scopes_ == 0)
    comm_.stats_.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - comm_.scope_start_)
            .count();
}

void Communicator::CheckPeer(int peer, int tag, const void* data, std::size_t count) const {
  DTSIM_CHECK(peer >= 0 && peer < size(), "peer rank out of range");
  DTSIM_CHECK(tag >= 0 && tag <= kGroupCreateTag, "message tag out of range");
  DTSIM_CHECK(data != nullptr || count == 0, "null buffer with a non-zero count");
}

void Communicator::CheckGroup(const std::vector<int>& group) const {
  DTSIM_CHECK(!group.empty() && group.front() >= 0 && group.back() < size(),
              "collective group must hold world ranks");
  DTSIM_CHECK(std::adjacent_find(group.begin(), group.end(), std::greater_equal<int>()) ==
                  group.end(),
              "collective group must be strictly increasing");
  DTSIM_CHECK(std::binary_search(group.begin(), group.end(), rank()),
              "collective group must contain the calling rank");
}

void Communicator::WaitTimed(SendRequest::Impl& impl) {
  TimedScope timed(*this);
  impl.Wait();
}

void Communicator::Send(int peer, int tag, const float* data, std::size_t count) {
  CheckPeer(peer, tag, data, count);
  TimedScope timed(*this);
  DoSend(peer, tag, data, count);
  stats_.bytes_sent += static_cast<std::int64_t>(count * sizeof(float));
  ++stats_.messages_sent;
}

SendRequest Communicator::Isend(int peer, int tag, const float* data, std::size_t count) {
  CheckPeer(peer, tag, data, count);
  TimedScope timed(*this);
  std::unique_ptr<SendRequest::Impl> impl = DoIsend(peer, tag, data, count);
  stats_.bytes_sent += static_cast<std::int64_t>(count * sizeof(float));
  ++stats_.messages_sent;
  return SendRequest(this, std::move(impl));
}

void Communicator::Recv(int peer, int tag, float* data, std::size_t count) {
  CheckPeer(peer, tag, data, count);
  TimedScope timed(*this);
  DoRecv(peer, tag, data, count);
}

int Communicator::RecvAny(int tag, float* data, std::size_t count) {
  CheckPeer(0, tag, data, count);
  TimedScope timed(*this);
  const int source = DoRecvAny(tag, data, count);
  DTSIM_CHECK(source >= 0 && source < size(), "RecvAny got a message from no rank");
  return source;
}

void Communicator::Barrier() {
  TimedScope timed(*this);
  DoBarrier();
}

void Communicator::Broadcast(float* data, std::size_t count, int root,
                             const std::vector<int>& group) {
  CheckGroup(group);
  DTSIM_CHECK(std::binary_search(group.begin(), group.end(), root),
              "broadcast root must be in the group");
  DTSIM_CHECK(data != nullptr || count == 0, "null buffer with a non-zero count");
  const int n = static_cast<int>(group.size());
  if (n == 1 || count == 0) return;
  TimedScope timed(*this);
  const auto position_of = [&](int world_rank) {
    return static_cast<int>(std::lower_bound(group.begin(), group.end(), world_rank) -
                            group.begin());
  };
  // Binomial tree over positions relative to the root: relative position v
  // receives from v - lowbit(v), then sends to v + m for each power of two
  // m < lowbit(v) (all m < n for the root), largest subtree first.
  const int v = (position_of(rank()) - position_of(root) + n) % n;
  const auto world = [&](int relative) {
    return group[static_cast<std::size_t>((relative + position_of(root)) % n)];
  };
  int lowbit = 1;
  while (lowbit < n && (v & lowbit) == 0) lowbit <<= 1;
  if (v != 0) Recv(world(v - lowbit), kBroadcastTag, data, count);
  std::vector<SendRequest> sends;
  for (int m = lowbit >> 1; m >= 1; m >>= 1)
    if (v + m < n) sends.push_back(Isend(world(v + m), kBroadcastTag, data, count));
  for (SendRequest& s : sends) s.Wait();
}

void Communicator::AllReduceSum(float* data, std::size_t count, AllReduceAlgorithm algorithm,
                                const std::vector<int>& group) {
  CheckGroup(group);
  DTSIM_CHECK(data != nullptr || count == 0, "null buffer with a non-zero count");
  if (group.size() == 1 || count == 0) return;
  TimedScope timed(*this);
  switch (algorithm) {
    case AllReduceAlgorithm::kRing: RingAllReduceSum(*this, data, count, group); return;
    case AllReduceAlgorithm::kTree: TreeAllReduceSum(*this, data, count, group); return;
    case AllReduceAlgorithm::kMpi: DoNativeAllReduceSum(data, count, group); return;
  }
  DTSIM_CHECK(false, "unknown all-reduce algorithm");
}

}  // namespace dtsim::exec

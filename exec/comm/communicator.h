// Communicator: the one interface real distributed runs talk through. Ranks
// are processes (MPI ranks for MpiCommunicator); buffers are host float32.
//
// Implementations provide point-to-point messages, a barrier and a native
// all-reduce; this base class adds what every implementation shares: the
// ring and double-binary-tree all-reduce (the schedules sim/cost/collectives.h
// simulates, run over the implementation's own Isend/Recv), a binomial
// broadcast, argument checks, and the statistics runs report (bytes sent,
// seconds inside communication calls).
//
// Collectives: every member of `group` calls the same collective with the
// same arguments, in the same order relative to the group's other
// collectives. `group` is a strictly increasing list of world ranks that
// includes the caller (a plan's collective group).
//
// Tags: user messages use tags in [0, kMaxUserTag]; the tags above are
// reserved for the collectives of this layer.
//
// Thread safety: none. Call a Communicator from one thread (the one that
// initialised MPI, for MpiCommunicator).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace dtsim::exec {

// How AllReduceSum combines the group's buffers.
enum class AllReduceAlgorithm : std::uint8_t {
  kRing,  // ring reduce-scatter + all-gather (exec/comm/ring_allreduce.h)
  kTree,  // NCCL-style double binary tree (exec/comm/tree_allreduce.h)
  kMpi,   // the implementation's native all-reduce (MPI_Allreduce)
};

// "ring", "tree" or "mpi".
const char* AllReduceAlgorithmName(AllReduceAlgorithm algorithm);

// Inverse of AllReduceAlgorithmName. Throws UserError naming the accepted
// values for anything else.
AllReduceAlgorithm ParseAllReduceAlgorithm(std::string_view name);

// Largest tag a caller may use; MPI guarantees tags up to 32767.
inline constexpr int kMaxUserTag = 32000;
// Tags reserved for this layer's collectives (above kMaxUserTag).
inline constexpr int kRingAllReduceTag = 32001;
inline constexpr int kTreeAllReduceTagA = 32002;
inline constexpr int kTreeAllReduceTagB = 32003;
inline constexpr int kBroadcastTag = 32004;
inline constexpr int kGroupCreateTag = 32005;

// What a rank has done through its Communicator since construction or the
// last ResetStats().
struct CommStats {
  // Payload bytes this rank handed to Send/Isend (the ring and tree
  // all-reduce and the broadcast included). kMpi all-reduces and barriers
  // are not counted: their traffic is internal to MPI.
  std::int64_t bytes_sent = 0;
  // Messages this rank handed to Send/Isend.
  std::int64_t messages_sent = 0;
  // Seconds (steady_clock) spent inside communication calls, including
  // SendRequest::Wait. A call made from inside another (the ring's Isend
  // inside AllReduceSum) is counted once, as part of the outer call.
  double seconds = 0;
};

class Communicator;

// A pending Isend. Move-only. The send buffer must stay live and unmodified
// until Wait() returns (or the request is destroyed), and the Communicator
// that made the request must outlive it.
class SendRequest {
 public:
  // What an implementation's DoIsend returns: the in-flight send.
  class Impl {
   public:
    virtual ~Impl() = default;
    // Blocks until the send buffer may be reused. Throws on failure.
    virtual void Wait() = 0;
  };

  // A request that is already complete.
  SendRequest() = default;
  SendRequest(SendRequest&& other) noexcept;
  // Waits for the request this one held, if pending, then takes `other`'s.
  SendRequest& operator=(SendRequest&& other) noexcept;
  SendRequest(const SendRequest&) = delete;
  SendRequest& operator=(const SendRequest&) = delete;
  // Waits if still pending. A failure seen here cannot be thrown and is
  // lost: call Wait() to see it.
  ~SendRequest();

  // Blocks until the send buffer may be reused; then done() is true. Does
  // nothing when already done. Throws what the implementation throws.
  void Wait();
  // True when the buffer may be reused (Wait() returned, or nothing pending).
  bool done() const { return impl_ == nullptr; }

 private:
  friend class Communicator;
  SendRequest(Communicator* owner, std::unique_ptr<Impl> impl);
  // Wait(), dropping any failure.
  void WaitQuietly() noexcept;

  Communicator* owner_ = nullptr;  // whose stats Wait's time goes to
  std::unique_ptr<Impl> impl_;     // null once complete
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // This process's rank in [0, size()).
  virtual int rank() const = 0;
  // Number of ranks (>= 1).
  virtual int size() const = 0;

  // Point-to-point. REQUIRES: 0 <= peer < size(), 0 <= tag <= kMaxUserTag
  // (or a reserved tag, from this layer's collectives), data non-null when
  // count > 0. The receiver's count must equal the sender's.

  // Sends `count` floats to `peer`; returns once `data` may be reused (which
  // may be before the peer receives). Sending to oneself with Send may
  // block forever: use Isend then Recv.
  void Send(int peer, int tag, const float* data, std::size_t count);
  // Starts sending `count` floats to `peer`; see SendRequest for the buffer.
  [[nodiscard]] SendRequest Isend(int peer, int tag, const float* data, std::size_t count);
  // Receives exactly `count` floats from `peer` with `tag` into `data`.
  // Messages from one peer with one tag arrive in the order they were sent.
  void Recv(int peer, int tag, float* data, std::size_t count);
  // Receives exactly `count` floats with `tag` from whichever rank's message
  // comes first; returns that rank. For servers that serve workers in
  // arrival order.
  int RecvAny(int tag, float* data, std::size_t count);

  // Returns once every rank has called Barrier.
  void Barrier();

  // Copies root's `count` floats to every member of `group` (binomial tree
  // over group positions, rooted at root). REQUIRES: root is in `group`.
  void Broadcast(float* data, std::size_t count, int root, const std::vector<int>& group);

  // Replaces `data` on every member of `group` with the element-wise sum of
  // all members' `data`. kRing and kTree give the same bits on every member
  // and on every run with the same inputs; kMpi is whatever MPI does.
  void AllReduceSum(float* data, std::size_t count, AllReduceAlgorithm algorithm,
                    const std::vector<int>& group);

  // Statistics since construction or the last ResetStats().
  const CommStats& stats() const { return stats_; }
  void ResetStats() { stats_ = CommStats{}; }

 protected:
  Communicator() = default;

  // The implementation's side of the calls above. Arguments are already
  // checked; the base class keeps the statistics.
  virtual std::unique_ptr<SendRequest::Impl> DoIsend(int peer, int tag, const float* data,
                                                     std::size_t count) = 0;
  virtual void DoSend(int peer, int tag, const float* data, std::size_t count) = 0;
  virtual void DoRecv(int peer, int tag, float* data, std::size_t count) = 0;
  virtual int DoRecvAny(int tag, float* data, std::size_t count) = 0;
  virtual void DoBarrier() = 0;
  // kMpi: the implementation's native sum all-reduce over `group` (checked,
  // size >= 2, count >= 1).
  virtual void DoNativeAllReduceSum(float* data, std::size_t count,
                                    const std::vector<int>& group) = 0;

 private:
  friend class SendRequest;

  // Adds the time from construction to destruction to stats_.seconds unless
  // a scope is already open (nested calls count once).
  class TimedScope {
   public:
    explicit TimedScope(Communicator& comm);
    ~TimedScope();
    TimedScope(const TimedScope&) = delete;
    TimedScope& operator=(const TimedScope&) = delete;

   private:
    Communicator& comm_;
  };

  void CheckPeer(int peer, int tag, const void* data, std::size_t count) const;
  void CheckGroup(const std::vector<int>& group) const;
  void WaitTimed(SendRequest::Impl& impl);

  CommStats stats_;
  int open_scopes_ = 0;  // TimedScopes currently open
  std::chrono::steady_clock::time_point scope_start_;
};

}  // namespace dtsim::exec

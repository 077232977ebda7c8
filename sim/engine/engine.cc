#include "sim/engine/engine.h"

#include <algorithm>
#include <queue>

#include "common/error.h"

namespace dtsim::sim {
namespace {

using plan::TaskId;

// Event ids: a task id (its end), -(collective + 1) (its end), or
// kWakeBase - stream (a stream whose head task's gate opens now).
constexpr std::int64_t kWakeBase = -(std::int64_t{1} << 40);
constexpr SimTime kNever = -1;

struct Event {
  SimTime time;
  std::uint64_t seq;  // insertion order breaks ties: deterministic
  std::int64_t id;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

class Executor {
 public:
  Executor(const plan::Plan& plan, const TaskCosts& costs, EngineHooks* hooks)
      : plan_(plan), costs_(costs), hooks_(hooks ? hooks : &default_hooks_) {
    const std::size_t n = plan.num_tasks();
    DTSIM_CHECK(costs.task_ns.size() == n, "one cost per task");
    DTSIM_CHECK(costs.collective_ns.size() == plan.collectives().size(),
                "one cost per collective");
    result_.timing.assign(n, {});
    remaining_.assign(n, 0);
    // Successor lists in CSR form.
    std::vector<std::int32_t> count(n + 1, 0);
    for (std::size_t t = 0; t < n; ++t) {
      auto deps = plan.deps(static_cast<TaskId>(t));
      const plan::Task& task = plan.tasks()[t];
      remaining_[t] = task.min_deps > 0 ? task.min_deps : static_cast<std::int32_t>(deps.size());
      for (TaskId d : deps) ++count[static_cast<std::size_t>(d) + 1];
    }
    succ_begin_.assign(n + 1, 0);
    for (std::size_t t = 0; t < n; ++t) succ_begin_[t + 1] = succ_begin_[t] + count[t + 1];
    succ_.assign(static_cast<std::size_t>(succ_begin_[n]), 0);
    std::vector<std::int64_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
    for (std::size_t t = 0; t < n; ++t)
      for (TaskId d : plan.deps(static_cast<TaskId>(t)))
        succ_[static_cast<std::size_t>(fill[static_cast<std::size_t>(d)]++)] =
            static_cast<TaskId>(t);
    // Stream queues in program order (sends hold no stream).
    const std::size_t streams = static_cast<std::size_t>(plan.num_ranks()) * plan::kNumStreams;
    queue_begin_.assign(streams + 1, 0);
    for (const plan::Task& t : plan.tasks())
      if (!IsSend(t)) ++queue_begin_[StreamOf(t) + 1];
    for (std::size_t s = 0; s < streams; ++s) queue_begin_[s + 1] += queue_begin_[s];
    queue_.assign(static_cast<std::size_t>(queue_begin_[streams]), 0);
    std::vector<std::int64_t> qfill(queue_begin_.begin(), queue_begin_.end() - 1);
    for (std::size_t t = 0; t < n; ++t)
      if (!IsSend(plan.tasks()[t]))
        queue_[static_cast<std::size_t>(qfill[StreamOf(plan.tasks()[t])]++)] = static_cast<TaskId>(t);
    head_.assign(queue_begin_.begin(), queue_begin_.end() - 1);
    busy_.assign(streams, false);
    // Server streams: ready-order FIFOs instead of program order.
    unordered_.assign(streams, false);
    for (plan::RankId r = 0; r < plan.num_ranks(); ++r)
      if (plan.IsServer(r))
        for (int st = 0; st < plan::kNumStreams; ++st)
          unordered_[static_cast<std::size_t>(r) * plan::kNumStreams + static_cast<std::size_t>(st)] =
              true;
    ready_.resize(streams);
    arrived_.assign(plan.collectives().size(), 0);
    if (!costs.host_ns.empty() || !costs.input_ns.empty()) SetUpGates();
  }

  EngineResult Run() {
    for (plan::RankId r = 0; r < static_cast<plan::RankId>(host_pos_.size()); ++r) AdvanceHost(r);
    for (std::size_t t = 0; t < plan_.num_tasks(); ++t)
      if (remaining_[t] == 0) Ready(static_cast<TaskId>(t));
    for (std::size_t s = 0; s < busy_.size(); ++s) TryStart(s);
    FlushSends();
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.time;
      ++result_.events;
      if (e.id >= 0) {
        Finish(static_cast<TaskId>(e.id));
      } else if (e.id <= kWakeBase) {
        TryStart(static_cast<std::size_t>(kWakeBase - e.id));
      } else {
        for (TaskId t : plan_.collectives()[static_cast<std::size_t>(-e.id - 1)].tasks) Finish(t);
      }
      // Sends started at this instant are priced once every event of the
      // instant has run, so that a rank's simultaneous sends share its link.
      if (!pending_sends_.empty() && (events_.empty() || events_.top().time != now_)) FlushSends();
    }
    DTSIM_CHECK(pending_sends_.empty(), "every started send is priced");
    for (std::size_t s = 0; s < busy_.size(); ++s)
      DTSIM_CHECK(head_[s] == queue_begin_[s + 1], "plan deadlocked: a stream never drained");
    for (std::size_t t = 0; t < plan_.num_tasks(); ++t)
      DTSIM_CHECK(done_[t], "plan deadlocked: a task never ran");
    result_.makespan = now_;
    return std::move(result_);
  }

 private:
  static bool IsSend(const plan::Task& t) { return t.kind == plan::TaskKind::kSend; }

  static std::size_t StreamOf(const plan::Task& t) {
    return static_cast<std::size_t>(t.rank) * plan::kNumStreams + static_cast<std::size_t>(t.stream);
  }

  // Task `id` has all the dependencies it waits for: a send starts at once;
  // on an unordered (server) stream it joins the ready queue; on an ordered
  // stream it starts when it reaches the head (TryStart checks).
  void Ready(TaskId id) {
    const auto t = static_cast<std::size_t>(id);
    const plan::Task& task = plan_.tasks()[t];
    result_.timing[t].ready = now_;
    if (IsSend(task)) {
      StartSend(id);
      return;
    }
    const std::size_t s = StreamOf(task);
    if (unordered_[s]) ready_[s].push_back(id);
    TryStart(s);
  }

  // Starts the next task of stream `s` if it can start now.
  void TryStart(std::size_t s) {
    if (busy_[s] || head_[s] == queue_begin_[s + 1]) return;
    TaskId id;
    if (unordered_[s]) {
      if (ready_next_[s] == ready_[s].size()) return;
      id = ready_[s][ready_next_[s]++];
    } else {
      id = queue_[static_cast<std::size_t>(head_[s])];
      if (remaining_[static_cast<std::size_t>(id)] > 0) return;
      if (!gated_.empty() && !GateOpen(id, s)) return;
    }
    const auto t = static_cast<std::size_t>(id);
    busy_[s] = true;
    const plan::Task& task = plan_.tasks()[t];
    if (task.kind == plan::TaskKind::kCollective) {
      const auto c = static_cast<std::size_t>(task.collective);
      const auto& coll = plan_.collectives()[c];
      if (++arrived_[c] == static_cast<std::int32_t>(coll.tasks.size())) {
        const SimTime end = hooks_->CollectiveEnd(task.collective, now_, costs_.collective_ns[c]);
        for (TaskId m : coll.tasks) {
          result_.timing[static_cast<std::size_t>(m)].start = now_;
          result_.timing[static_cast<std::size_t>(m)].end = end;
        }
        events_.push({end, seq_++, -task.collective - 1});
      }
      return;
    }
    result_.timing[t].start = now_;
    result_.timing[t].end = hooks_->ComputeEnd(task, now_, costs_.task_ns[t]);
    if (!result_.host_end.empty() && result_.host_end[t] > result_.timing[t].end) {
      // The last kernel cannot end before it is launched.
      result_.host_wait_ns[t] += result_.host_end[t] - result_.timing[t].end;
      result_.timing[t].end = result_.host_end[t];
    }
    events_.push({result_.timing[t].end, seq_++, id});
  }

  // A send starts when its dependencies are done and, with a host model,
  // once the host has issued it.
  void StartSend(TaskId id) {
    const auto t = static_cast<std::size_t>(id);
    SimTime start = now_;
    if (!result_.host_begin.empty() && gated_[t]) {
      if (result_.host_begin[t] == kNever) {  // AdvanceHost starts it
        send_waiting_[t] = 1;
        able_since_[t] = now_;
        return;
      }
      const SimTime since = able_since_[t] == kNever ? now_ : able_since_[t];
      start = std::max(start, result_.host_end[t]);
      result_.host_wait_ns[t] = std::max<SimTime>(0, result_.host_end[t] - since);
    }
    result_.timing[t].start = start;
    pending_sends_.push_back(id);  // FlushSends prices it with the rank's other sends
  }

  // Prices the sends started at this instant: those of one rank with the
  // same start go to the hooks together (they share the rank's link);
  // groups in the order their first send started, sends in the order they
  // started. Linear in the number of sends.
  void FlushSends() {
    if (rank_group_.empty()) rank_group_.assign(static_cast<std::size_t>(plan_.num_ranks()), -1);
    groups_.clear();
    for (const TaskId id : pending_sends_) {
      const auto t = static_cast<std::size_t>(id);
      const auto r = static_cast<std::size_t>(plan_.tasks()[t].rank);
      const SimTime start = result_.timing[t].start;
      std::int64_t g = rank_group_[r];
      while (g >= 0 && groups_[static_cast<std::size_t>(g)].start != start)
        g = groups_[static_cast<std::size_t>(g)].next_of_rank;
      if (g < 0) {
        g = static_cast<std::int64_t>(groups_.size());
        groups_.push_back({start, rank_group_[r], {}});
        rank_group_[r] = g;
      }
      groups_[static_cast<std::size_t>(g)].ids.push_back(id);
    }
    for (SendGroup& group : groups_) {
      group_tasks_.clear();
      group_ns_.clear();
      for (const TaskId id : group.ids) {
        const auto t = static_cast<std::size_t>(id);
        group_tasks_.push_back(&plan_.tasks()[t]);
        group_ns_.push_back(costs_.task_ns[t]);
        rank_group_[static_cast<std::size_t>(plan_.tasks()[t].rank)] = -1;
      }
      group_ends_.assign(group.ids.size(), 0);
      hooks_->TransferGroupEnds(group_tasks_, group.start, group_ns_, group_ends_);
      for (std::size_t k = 0; k < group.ids.size(); ++k) {
        result_.timing[static_cast<std::size_t>(group.ids[k])].end = group_ends_[k];
        events_.push({group_ends_[k], seq_++, group.ids[k]});
      }
    }
    pending_sends_.clear();
  }

  // --- Gates: the host thread and the input pipeline -----------------------

  void SetUpGates() {
    const std::size_t n = plan_.num_tasks();
    gated_.assign(n, 0);
    woken_.assign(n, 0);
    send_waiting_.assign(n, 0);
    able_since_.assign(n, kNever);
    const auto ranks = static_cast<std::size_t>(plan_.num_ranks());
    if (!costs_.host_ns.empty()) {
      DTSIM_CHECK(costs_.host_ns.size() == n && costs_.host_sync.size() == n &&
                      costs_.host_lead_ns.size() == n,
                  "one host cost, lead and sync flag per task");
      result_.host_begin.assign(n, kNever);
      result_.host_end.assign(n, kNever);
      result_.host_wait_ns.assign(n, 0);
      // Each worker rank's tasks in id order.
      host_begin_idx_.assign(ranks + 1, 0);
      for (const plan::Task& t : plan_.tasks())
        if (!plan_.IsServer(t.rank)) ++host_begin_idx_[static_cast<std::size_t>(t.rank) + 1];
      for (std::size_t r = 0; r < ranks; ++r) host_begin_idx_[r + 1] += host_begin_idx_[r];
      host_tasks_.assign(static_cast<std::size_t>(host_begin_idx_[ranks]), 0);
      std::vector<std::int64_t> fill(host_begin_idx_.begin(), host_begin_idx_.end() - 1);
      for (std::size_t i = 0; i < n; ++i) {
        const plan::Task& t = plan_.tasks()[i];
        if (plan_.IsServer(t.rank)) continue;
        host_tasks_[static_cast<std::size_t>(fill[static_cast<std::size_t>(t.rank)]++)] =
            static_cast<TaskId>(i);
        gated_[i] = 1;
      }
      host_pos_.assign(host_begin_idx_.begin(), host_begin_idx_.end() - 1);
      host_time_.assign(ranks, 0);
      host_waiting_.assign(ranks, -1);
      if (!costs_.host_await.empty()) {
        DTSIM_CHECK(costs_.host_await.size() == n && costs_.host_await_setup_ns.size() == n,
                    "one await flag and setup time per task");
        awaited_by_.assign(n, -1);
        setup_paid_.assign(ranks, 0);
      }
    }
    if (!costs_.input_ns.empty()) {
      DTSIM_CHECK(costs_.input_ns.size() == ranks, "one input time per rank");
      DTSIM_CHECK(costs_.input_prefetch >= 0, "input prefetch >= 0");
      result_.input_wait_ns.assign(n, 0);
      input_iteration_.assign(n, -1);
      std::vector<std::int32_t> seen(ranks, -1);
      for (std::size_t i = 0; i < n; ++i) {
        const plan::Task& t = plan_.tasks()[i];
        const auto r = static_cast<std::size_t>(t.rank);
        if (costs_.input_ns[r] <= 0 || plan_.IsServer(t.rank) ||
            t.stream != plan::StreamKind::kCompute || t.iteration <= seen[r])
          continue;
        seen[r] = t.iteration;
        input_iteration_[i] = t.iteration;
        gated_[i] = 1;
      }
      batch_ready_.assign(ranks, {});
      batch_taken_.assign(ranks, {});
    }
  }

  // The host of rank `r` issues tasks until it must wait for one to finish.
  void AdvanceHost(plan::RankId r) {
    const auto rr = static_cast<std::size_t>(r);
    if (host_waiting_[rr] >= 0) return;
    while (host_pos_[rr] < host_begin_idx_[rr + 1]) {
      const TaskId id = host_tasks_[static_cast<std::size_t>(host_pos_[rr])];
      const auto t = static_cast<std::size_t>(id);
      SimTime issue_ns = costs_.host_ns[t];
      if (!awaited_by_.empty() && costs_.host_await[t]) {
        // The step's setup, then the wait for the servers' replies.
        if (!setup_paid_[rr]) {
          host_time_[rr] = AddSimTime(host_time_[rr], costs_.host_await_setup_ns[t]);
          setup_paid_[rr] = 1;
        }
        for (const TaskId d : plan_.deps(id)) {
          const auto dd = static_cast<std::size_t>(d);
          if (!plan_.IsServer(plan_.tasks()[dd].rank)) continue;
          if (!done_[dd]) {
            awaited_by_[dd] = static_cast<std::int32_t>(r);
            host_waiting_[rr] = d;
            return;
          }
          host_time_[rr] = std::max(host_time_[rr], result_.timing[dd].end);
        }
        setup_paid_[rr] = 0;
        issue_ns -= std::min(issue_ns, costs_.host_await_setup_ns[t]);
      }
      ++host_pos_[rr];
      result_.host_begin[t] = host_time_[rr];
      host_time_[rr] = AddSimTime(host_time_[rr], issue_ns);
      result_.host_end[t] = host_time_[rr];
      const plan::Task& task = plan_.tasks()[t];
      if (IsSend(task)) {
        if (send_waiting_[t]) {
          send_waiting_[t] = 0;
          StartSend(id);
        }
      } else {
        TryStart(StreamOf(task));
      }
      if (costs_.host_sync[t]) {
        if (!done_[t]) {
          host_waiting_[rr] = id;
          return;
        }
        host_time_[rr] = std::max(host_time_[rr], result_.timing[t].end);
      }
    }
  }

  // The task rank `r`'s host waited for has finished: it goes on issuing.
  void ResumeHost(plan::RankId r) {
    const auto rr = static_cast<std::size_t>(r);
    host_waiting_[rr] = -1;
    host_time_[rr] = std::max(host_time_[rr], now_);
    AdvanceHost(r);
  }

  // True when task `id`, at the head of stream `s` with its dependencies
  // done, may start now; otherwise arranges to be woken when it may.
  bool GateOpen(TaskId id, std::size_t s) {
    const auto t = static_cast<std::size_t>(id);
    if (!gated_[t]) return true;
    if (able_since_[t] == kNever) able_since_[t] = now_;
    const SimTime since = able_since_[t];
    SimTime gate = now_;
    if (!result_.host_begin.empty()) {
      if (result_.host_begin[t] == kNever) return false;  // AdvanceHost calls TryStart
      // A collective is one launch: it is issued when the host is done with
      // it; a compute task runs while its kernels are being launched.
      // An awaited task's setup was spent before host_begin (AdvanceHost).
      const SimTime setup =
          !awaited_by_.empty() && costs_.host_await[t] ? costs_.host_await_setup_ns[t] : 0;
      const SimTime lead = std::min(costs_.host_lead_ns[t], costs_.host_ns[t]);
      const SimTime issued =
          plan_.tasks()[t].kind == plan::TaskKind::kCollective
              ? result_.host_end[t]
              : AddSimTime(result_.host_begin[t], lead - std::min(lead, setup));
      gate = std::max(gate, issued);
      result_.host_wait_ns[t] = std::max<SimTime>(0, issued - since);
    }
    const bool takes_batch = !input_iteration_.empty() && input_iteration_[t] >= 0;
    if (takes_batch) {
      const SimTime ready = BatchReady(plan_.tasks()[t].rank, since);
      result_.input_wait_ns[t] = std::max<SimTime>(0, ready - since);
      gate = std::max(gate, ready);
    }
    if (gate > now_) {
      if (!woken_[t]) {
        woken_[t] = 1;
        events_.push({gate, seq_++, kWakeBase - static_cast<std::int64_t>(s)});
      }
      return false;
    }
    if (takes_batch) batch_taken_[static_cast<std::size_t>(plan_.tasks()[t].rank)].push_back(now_);
    return true;
  }

  // When rank r's batch for its k-th iteration with input is ready, asked
  // for by a task able to start since `since`. Without prefetch (0) the
  // batch is prepared only once asked for.
  SimTime BatchReady(plan::RankId r, SimTime since) {
    const auto rr = static_cast<std::size_t>(r);
    auto& ready = batch_ready_[rr];
    const auto& taken = batch_taken_[rr];
    const std::size_t k = taken.size();  // batches taken so far: this is batch k
    const auto q = static_cast<std::size_t>(costs_.input_prefetch);
    while (ready.size() <= k) {
      const std::size_t j = ready.size();
      SimTime begin = j == 0 ? 0 : ready[j - 1];
      if (q == 0) begin = std::max(begin, since);  // j == k: earlier ones were asked for
      else if (j >= q) begin = std::max(begin, taken[j - q]);
      ready.push_back(AddSimTime(begin, costs_.input_ns[rr]));
    }
    return ready[k];
  }

  void Finish(TaskId id) {
    const auto t = static_cast<std::size_t>(id);
    done_[t] = true;
    const plan::Task& task = plan_.tasks()[t];
    for (std::int64_t i = succ_begin_[t]; i < succ_begin_[t + 1]; ++i) {
      const TaskId succ = succ_[static_cast<std::size_t>(i)];
      if (--remaining_[static_cast<std::size_t>(succ)] == 0) Ready(succ);
    }
    if (!host_waiting_.empty() && !plan_.IsServer(task.rank)) {
      const auto r = static_cast<std::size_t>(task.rank);
      if (host_waiting_[r] == id) ResumeHost(task.rank);
    }
    if (!awaited_by_.empty() && awaited_by_[t] >= 0) {
      // A server's reply a worker's host waits for.
      const auto r = static_cast<std::size_t>(awaited_by_[t]);
      awaited_by_[t] = -1;
      if (host_waiting_[r] == id) ResumeHost(static_cast<plan::RankId>(r));
    }
    if (IsSend(task)) return;
    const std::size_t s = StreamOf(task);
    busy_[s] = false;
    ++head_[s];
    TryStart(s);
  }

  const plan::Plan& plan_;
  const TaskCosts& costs_;
  EngineHooks default_hooks_;
  EngineHooks* hooks_;
  std::vector<bool> done_ = std::vector<bool>(plan_.num_tasks(), false);
  std::vector<bool> unordered_;
  std::vector<std::vector<TaskId>> ready_;  // unordered streams: tasks in ready order
  std::vector<std::size_t> ready_next_ = std::vector<std::size_t>(
      static_cast<std::size_t>(plan_.num_ranks()) * plan::kNumStreams, 0);
  EngineResult result_;
  std::vector<std::int32_t> remaining_;
  std::vector<std::int64_t> succ_begin_;
  std::vector<TaskId> succ_;
  std::vector<std::int64_t> queue_begin_;
  std::vector<TaskId> queue_;
  std::vector<std::int64_t> head_;
  std::vector<bool> busy_;
  std::vector<std::int32_t> arrived_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  // Gates (SetUpGates); empty without a host model and input pipeline.
  std::vector<std::uint8_t> gated_;           // per task: waits for the host or its batch
  std::vector<std::int64_t> host_begin_idx_;  // per rank: its tasks in host_tasks_
  std::vector<TaskId> host_tasks_;
  std::vector<std::int64_t> host_pos_;        // per rank: next task the host issues
  std::vector<SimTime> host_time_;            // per rank: when its host is free
  std::vector<TaskId> host_waiting_;          // per rank: the task it waits for, or -1
  std::vector<std::int32_t> awaited_by_;      // per task: the rank whose host awaits it, or -1
  std::vector<std::uint8_t> setup_paid_;      // per rank: the awaited task's setup is spent
  std::vector<std::int32_t> input_iteration_;  // per task: its iteration if it takes a batch
  std::vector<std::vector<SimTime>> batch_ready_, batch_taken_;  // per rank, per batch
  std::vector<std::uint8_t> woken_;           // per task: a wake event was pushed
  std::vector<std::uint8_t> send_waiting_;    // per send: ready, not issued yet
  std::vector<SimTime> able_since_;           // per task: first time only a gate held it
  std::uint64_t seq_ = 0;
  SimTime now_ = 0;
  std::vector<TaskId> pending_sends_;  // started at this instant, not priced yet
  // FlushSends' scratch: the groups (one rank, one start), and per rank its
  // latest group (-1: none), chained through next_of_rank.
  struct SendGroup {
    SimTime start = 0;
    std::int64_t next_of_rank = -1;
    std::vector<TaskId> ids;
  };
  std::vector<SendGroup> groups_;
  std::vector<std::int64_t> rank_group_;
  std::vector<const plan::Task*> group_tasks_;
  std::vector<SimTime> group_ns_, group_ends_;
};

}  // namespace

EngineResult RunEngine(const plan::Plan& plan, const TaskCosts& costs, EngineHooks* hooks) {
  return Executor(plan, costs, hooks).Run();
}

}  // namespace dtsim::sim

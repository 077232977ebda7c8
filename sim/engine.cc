#include "sim/engine.h"

#include <queue>

#include "common/error.h"

namespace dtsim::sim {
namespace {

using plan::TaskId;

struct Event {
  SimTime time;
  std::uint64_t seq;  // insertion order breaks ties: deterministic
  std::int32_t id;    // task id, or -(collective + 1)
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
  }

  EngineResult Run() {
    for (std::size_t t = 0; t < plan_.num_tasks(); ++t)
      if (remaining_[t] == 0) Ready(static_cast<TaskId>(t));
    for (std::size_t s = 0; s < busy_.size(); ++s) TryStart(s);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.time;
      ++result_.events;
      if (e.id >= 0) {
        Finish(e.id);
      } else {
        for (TaskId t : plan_.collectives()[static_cast<std::size_t>(-e.id - 1)].tasks) Finish(t);
      }
    }
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
      result_.timing[t].start = now_;
      result_.timing[t].end = hooks_->TransferEnd(task, now_, costs_.task_ns[t]);
      events_.push({result_.timing[t].end, seq_++, id});
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
    }
    const auto t = static_cast<std::size_t>(id);
    busy_[s] = true;
    const plan::Task& task = plan_.tasks()[t];
    if (task.kind == plan::TaskKind::kCollective) {
      const auto c = static_cast<std::size_t>(task.collective);
      const auto& coll = plan_.collectives()[c];
      if (++arrived_[c] == static_cast<std::int32_t>(coll.tasks.size())) {
        const SimTime end = AddSimTime(now_, costs_.collective_ns[c]);
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
    events_.push({result_.timing[t].end, seq_++, id});
  }

  void Finish(TaskId id) {
    const auto t = static_cast<std::size_t>(id);
    done_[t] = true;
    const plan::Task& task = plan_.tasks()[t];
    for (std::int64_t i = succ_begin_[t]; i < succ_begin_[t + 1]; ++i) {
      const TaskId succ = succ_[static_cast<std::size_t>(i)];
      if (--remaining_[static_cast<std::size_t>(succ)] == 0) Ready(succ);
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
  std::uint64_t seq_ = 0;
  SimTime now_ = 0;
};

}  // namespace

EngineResult RunEngine(const plan::Plan& plan, const TaskCosts& costs, EngineHooks* hooks) {
  return Executor(plan, costs, hooks).Run();
}

}  // namespace dtsim::sim

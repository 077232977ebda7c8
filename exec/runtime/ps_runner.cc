#include "exec/runtime/ps_runner.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "common/error.h"
#include "exec/runtime/optimizer.h"
#include "exec/runtime/result_gather.h"
#include "exec/runtime/runtime_util.h"

namespace dtsim::exec {
namespace {

using runtime_util::Clock;
using runtime_util::Seconds;
using plan::Task;
using plan::TaskId;
using plan::TaskKind;

// The whole model's initial parameters, as every worker initialises them
// (a runtime of one sample, dropped once the values are read).
std::vector<float> InitialParams(const models::ModelGraph& graph, Backend& backend,
                                 std::uint64_t seed) {
  RuntimeOptions ro;
  ro.micro_batch = 1;
  ro.slots = 1;
  ro.seed = seed;
  const ModelRuntime runtime(graph, backend, ro);
  return runtime.DownloadParams();
}

// One server rank: its shard, the workers' pull/push state and the
// counters it reports. See ps_runner.h for the protocol.
class PsServer {
 public:
  PsServer(const plan::Plan& plan, const models::ModelGraph& graph, Communicator& comm,
           Backend& backend, const ExecOptions& options);
  ~PsServer();
  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;

  ExecResult Run();

 private:
  // Sends `worker` its next pull now if it is ready, else when its next
  // push arrives.
  void ReleasePull(int worker, IterationTimes& times);
  void SendPull(int worker, IterationTimes& times);
  // Receives the next push of any worker into recv_, sends that worker a
  // pull it is owed, and returns the worker and the version it echoes.
  std::pair<int, std::int64_t> ReceivePush(IterationTimes& times);
  void ApplyStep(int contributions, IterationTimes& times);
  void ApplyNext(IterationTimes& times);
  // Averages sum_ over `contributions` pushes and applies it.
  void Apply(int contributions, IterationTimes& times);
  void CountStaleness(std::int64_t echoed);

  const plan::Plan& plan_;
  Communicator& comm_;
  Backend& backend_;
  const int me_;
  const int iterations_;  // real iterations
  const int period_;                // plan iteration = real iteration % period_
  const bool record_timeline_;      // take part in the timeline gather
  int workers_ = 0;       // ranks [0, workers_) (plan/parameter_server.h)
  bool async_ = false;
  // Per worker over the whole run (the same for every worker).
  std::int64_t pulls_per_worker_ = 0, pushes_per_worker_ = 0;
  std::vector<plan::ParamSpan> spans_;  // of the flat buffer, in order
  std::int64_t count_ = 0;              // elements held
  std::vector<std::vector<TaskId>> tasks_;  // per plan iteration, mine, id order
  float* params_ = nullptr;                 // backend, count_ (>= 1 allocated)
  float* grads_ = nullptr;                  // backend, the gradient mean to apply
  std::unique_ptr<Optimizer> optimizer_;    // null when workers push parameters
  std::vector<float> sum_, recv_;           // host: running sum, one push payload
  // Per worker: the pull in flight and its payload; whether it pushed since
  // its last pull (ready); pulls released but not sent; pulls sent, pushes
  // received.
  std::vector<std::vector<float>> pull_payload_;
  std::vector<SendRequest> pull_request_;
  std::vector<bool> ready_;
  std::vector<int> owed_;
  std::vector<std::int64_t> pulls_sent_, pushes_received_;
  std::int64_t version_ = 0;  // updates applied
  ServerCounters counters_;
  std::vector<std::int32_t> contributions_;
};

PsServer::PsServer(const plan::Plan& plan, const models::ModelGraph& graph, Communicator& comm,
                   Backend& backend, const ExecOptions& options)
    : plan_(plan), comm_(comm), backend_(backend), me_(comm.rank()),
      iterations_(options.iterations), period_(plan.sync.averaging_period),
      record_timeline_(options.record_timeline) {
  DTSIM_CHECK(plan.IsServer(me_), "PsServer on a worker rank");
  DTSIM_CHECK(period_ >= 1 && period_ <= plan.iterations, "averaging period");
  for (int r = 0; r < plan.num_ranks(); ++r)
    if (!plan.IsServer(r)) {
      DTSIM_CHECK(r == workers_, "workers must come before servers");
      ++workers_;
    }
  tasks_.assign(static_cast<std::size_t>(period_), {});
  std::vector<bool> pulls_at(static_cast<std::size_t>(period_), false);
  std::vector<bool> pushes_at(static_cast<std::size_t>(period_), false);
  int most_applies = 0;
  std::vector<int> applies(static_cast<std::size_t>(period_), 0);
  for (TaskId id = 0; id < static_cast<TaskId>(plan.num_tasks()); ++id) {
    const Task& t = plan.task(id);
    if (t.iteration >= period_) continue;
    const auto p = static_cast<std::size_t>(t.iteration);
    if (t.kind == TaskKind::kSend && t.peer == me_) pushes_at[p] = true;
    if (t.rank != me_) continue;
    tasks_[p].push_back(id);
    if (t.kind == TaskKind::kSend) pulls_at[p] = true;
    if (t.kind == TaskKind::kOptimizer) most_applies = std::max(most_applies, ++applies[p]);
  }
  // One optimizer task per push (asynchronous) or one per step (synchronous).
  async_ = workers_ > 1 && most_applies > 1;
  DTSIM_CHECK(pulls_at[0], "the first iteration must pull");
  for (int i = 0; i < iterations_; ++i) {
    pulls_per_worker_ += pulls_at[static_cast<std::size_t>(i % period_)] ? 1 : 0;
    pushes_per_worker_ += pushes_at[static_cast<std::size_t>(i % period_)] ? 1 : 0;
  }

  const std::vector<float> init = InitialParams(graph, backend, options.seed);
  spans_ = ServerSpans(plan, me_);
  count_ = SpanElements(spans_);
  std::vector<float> mine;
  for (const plan::ParamSpan& span : spans_) {
    DTSIM_CHECK(span.offset >= 0 && span.offset + span.count <= static_cast<std::int64_t>(init.size()),
                "server span outside the model's parameters");
    mine.insert(mine.end(), init.begin() + span.offset, init.begin() + span.offset + span.count);
  }
  const std::int64_t alloc = std::max<std::int64_t>(1, count_);
  params_ = backend.Allocate(alloc);
  grads_ = backend.Allocate(alloc);
  backend.Upload(params_, mine.data(), count_);
  counters_.is_server = true;
  counters_.params = count_;
  if (plan.sync.averaged == plan::Averaged::kGradients)
    optimizer_ = std::make_unique<Optimizer>(backend, count_, options.optimizer);
  sum_.resize(static_cast<std::size_t>(count_));
  recv_.resize(static_cast<std::size_t>(kPsHeader + count_));
  const auto w = static_cast<std::size_t>(workers_);
  pull_payload_.resize(w);
  pull_request_.resize(w);
  ready_.assign(w, true);
  owed_.assign(w, 0);
  pulls_sent_.assign(w, 0);
  pushes_received_.assign(w, 0);
}

PsServer::~PsServer() {
  backend_.Free(params_);
  backend_.Free(grads_);
}

void PsServer::ReleasePull(int worker, IterationTimes& times) {
  if (ready_[static_cast<std::size_t>(worker)])
    SendPull(worker, times);
  else
    ++owed_[static_cast<std::size_t>(worker)];
}

// REQUIRES: the worker is ready, so it has received its previous pull and
// the Wait below returns without waiting for the worker.
void PsServer::SendPull(int worker, IterationTimes& times) {
  const auto w = static_cast<std::size_t>(worker);
  DTSIM_CHECK(ready_[w] && pulls_sent_[w] < pulls_per_worker_, "pull out of turn");
  const auto start = Clock::now();
  pull_request_[w].Wait();
  std::vector<float>& payload = pull_payload_[w];
  payload.resize(static_cast<std::size_t>(kPsHeader + count_));
  payload[0] = static_cast<float>(version_);
  backend_.Download(payload.data() + kPsHeader, params_, count_);
  pull_request_[w] = comm_.Isend(worker, kPsPullTag, payload.data(), payload.size());
  counters_.pull_bytes += static_cast<std::int64_t>(payload.size() * sizeof(float));
  ready_[w] = false;
  ++pulls_sent_[w];
  times.comm += Seconds(start, Clock::now());
}

std::pair<int, std::int64_t> PsServer::ReceivePush(IterationTimes& times) {
  const auto start = Clock::now();
  const int worker = comm_.RecvAny(kPsPushTag, recv_.data(), recv_.size());
  times.comm += Seconds(start, Clock::now());
  counters_.push_bytes += static_cast<std::int64_t>(recv_.size() * sizeof(float));
  DTSIM_CHECK(worker >= 0 && worker < workers_, "push from a rank that is not a worker");
  const auto w = static_cast<std::size_t>(worker);
  const auto echoed = static_cast<std::int64_t>(recv_[0]);
  DTSIM_CHECK(!ready_[w] && pushes_received_[w] < pushes_per_worker_,
              "worker " + std::to_string(worker) + " pushed twice without a pull between");
  DTSIM_CHECK(echoed <= version_, "a push from a version not yet sent");
  ready_[w] = true;
  ++pushes_received_[w];
  if (owed_[w] > 0) {
    --owed_[w];
    SendPull(worker, times);
  }
  return {worker, echoed};
}

void PsServer::CountStaleness(std::int64_t echoed) {
  const std::int64_t stale = version_ - echoed;
  counters_.staleness_sum += stale;
  counters_.staleness_max = std::max(counters_.staleness_max, stale);
}

// Synchronous: the first `contributions` pushes computed from the current
// version, in arrival order; pushes from older versions are dropped.
void PsServer::ApplyStep(int contributions, IterationTimes& times) {
  DTSIM_CHECK(contributions >= 1 && contributions <= workers_, "contributions out of range");
  std::fill(sum_.begin(), sum_.end(), 0.0f);
  for (int accepted = 0; accepted < contributions;) {
    const std::int64_t echoed = ReceivePush(times).second;
    if (echoed < version_) {
      ++counters_.pushes_dropped;
      continue;
    }
    CountStaleness(echoed);
    for (std::size_t j = 0; j < sum_.size(); ++j) sum_[j] += recv_[static_cast<std::size_t>(kPsHeader) + j];
    ++accepted;
  }
  Apply(contributions, times);
}

// Asynchronous: the next push of anyone, applied alone; its worker gets the
// fresh shard for its next step at once.
void PsServer::ApplyNext(IterationTimes& times) {
  const auto [worker, echoed] = ReceivePush(times);
  CountStaleness(echoed);
  std::copy(recv_.begin() + kPsHeader, recv_.end(), sum_.begin());
  Apply(1, times);
  if (pulls_sent_[static_cast<std::size_t>(worker)] < pulls_per_worker_) SendPull(worker, times);
}

void PsServer::Apply(int contributions, IterationTimes& times) {
  const auto start = Clock::now();
  const float inv = 1.0f / static_cast<float>(contributions);
  for (float& x : sum_) x *= inv;
  if (optimizer_) {
    backend_.Upload(grads_, sum_.data(), count_);
    optimizer_->Step(params_, grads_);
  } else {
    backend_.Upload(params_, sum_.data(), count_);  // the mean of the parameters
  }
  backend_.Synchronize();
  times.compute += Seconds(start, Clock::now());
  ++version_;
  ++counters_.updates;
  counters_.pushes_applied += contributions;
  contributions_.push_back(contributions);
}

// Walks this server's tasks iteration by iteration (plan iteration i % H):
// kSend = a pull, kOptimizer = an update.
ExecResult PsServer::Run() {
  ExecResult result;
  result.samples_per_iteration = plan_.samples_per_iteration;
  std::vector<IterationTimes> times(static_cast<std::size_t>(iterations_));
  comm_.Barrier();  // as the workers do before their first iteration
  for (int i = 0; i < iterations_; ++i) {
    IterationTimes& it = times[static_cast<std::size_t>(i)];
    const auto start = Clock::now();
    for (TaskId id : tasks_[static_cast<std::size_t>(i % period_)]) {
      const Task& t = plan_.task(id);
      switch (t.kind) {
        case TaskKind::kSend:
          // Asynchronous pulls after the first are sent by ApplyNext.
          if (!async_ || i == 0) ReleasePull(t.peer, it);
          break;
        case TaskKind::kOptimizer:
          if (async_)
            ApplyNext(it);
          else
            ApplyStep(t.contributions, it);
          break;
        default:
          throw InternalError("server task of kind " + std::string(plan::TaskKindName(t.kind)));
      }
    }
    it.seconds = Seconds(start, Clock::now());
  }
  // Pushes still owed (late workers of k-of-n steps) are dropped; the pulls
  // they release still go out.
  IterationTimes& last = times.back();
  const auto start = Clock::now();
  const std::int64_t expected = pushes_per_worker_ * workers_;
  std::int64_t received = 0;
  for (std::int64_t r : pushes_received_) received += r;
  for (; received < expected; ++received) {
    ReceivePush(last);
    ++counters_.pushes_dropped;
  }
  for (int w = 0; w < workers_; ++w) {
    const auto k = static_cast<std::size_t>(w);
    DTSIM_CHECK(owed_[k] == 0 && pulls_sent_[k] == pulls_per_worker_, "pulls left unsent");
    pull_request_[k].Wait();
  }
  last.seconds += Seconds(start, Clock::now());

  result.final_params.resize(static_cast<std::size_t>(count_));
  backend_.Download(result.final_params.data(), params_, count_);
  result.params_offset = spans_.empty() ? 0 : spans_.front().offset;
  result.param_spans = spans_;
  result.update_contributions = contributions_;
  result.bytes_sent = static_cast<std::uint64_t>(comm_.stats().bytes_sent);
  GatherResult(comm_, {times, {}, counters_}, &result);
  // Servers record no tasks but take part in the collective gather.
  if (record_timeline_) GatherTimeline(comm_, {}, &result);
  return result;
}

}  // namespace

const std::vector<plan::ParamSpan>& ServerSpans(const plan::Plan& plan, plan::RankId server) {
  DTSIM_CHECK(plan.IsServer(server), "not a server rank");
  std::size_t index = 0;
  for (plan::RankId r = 0; r < server; ++r) index += plan.IsServer(r) ? 1 : 0;
  DTSIM_CHECK(index < plan.server_params.size(), "the plan places no variables on this server");
  return plan.server_params[index];
}

std::int64_t SpanElements(const std::vector<plan::ParamSpan>& spans) {
  std::int64_t n = 0;
  for (const plan::ParamSpan& span : spans) n += span.count;
  return n;
}

ExecResult RunParameterServer(const plan::Plan& plan, const models::ModelGraph& graph,
                              Communicator& comm, Backend& backend, const ExecOptions& options) {
  if (comm.size() != plan.num_ranks() || !plan.IsServer(comm.rank()))
    throw InternalError("RunParameterServer on a rank that is not one of the plan's servers");
  PsServer server(plan, graph, comm, backend, options);
  return server.Run();
}

}  // namespace dtsim::exec

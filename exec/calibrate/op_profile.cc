#include "exec/calibrate/op_profile.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <atomic>
#include <barrier>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "common/error.h"
#include "exec/runtime/model_runtime.h"

namespace dtsim::exec {
namespace {

using Clock = std::chrono::steady_clock;
using models::OpId;
using models::OpKind;

double Since(Clock::time_point start) {
  // A call shorter than the clock's tick still took time: at least 1 ns.
  return std::max(1e-9, std::chrono::duration<double>(Clock::now() - start).count());
}

// The vocabulary of the embedding that reads the graph's first input, or 0
// when it is not a token sequence.
std::int64_t TokenVocabulary(const models::ModelGraph& graph) {
  for (OpId c : graph.consumers(0)) {
    const models::Op& op = graph.op(c);
    if (op.kind == OpKind::kEmbedding && op.attrs.ids == models::EmbeddingIds::kTokens)
      return op.attrs.vocab;
  }
  return 0;
}

std::int64_t LossClasses(const models::ModelGraph& graph) {
  for (OpId v = 0; v < graph.num_ops(); ++v) {
    if (graph.op(v).kind == OpKind::kSoftmaxCrossEntropy) return std::max<std::int64_t>(1, graph.op(v).attrs.vocab);
  }
  return 1;
}

// One copy of the training step: a runtime, its optimizer and a batch.
class StepRunner {
 public:
  StepRunner(const models::ModelGraph& graph, Backend& backend, const OpProfileOptions& options)
      : graph_(graph), backend_(backend), rt_(graph, backend, Runtime(options)),
        optimizer_(backend, rt_.num_params(), options.optimizer) {
    // A batch like exec's synthetic ones: token ids below the vocabulary, or
    // uniform values in [0, 1); labels below the loss's class count.
    std::mt19937_64 rng(options.seed);
    x_.resize(static_cast<std::size_t>(rt_.input_elements() * options.batch));
    const std::int64_t vocab = TokenVocabulary(graph);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    for (float& v : x_) {
      v = vocab > 0
              ? static_cast<float>(std::uniform_int_distribution<std::int64_t>(0, vocab - 1)(rng))
              : uniform(rng);
    }
    labels_.resize(static_cast<std::size_t>(rt_.label_elements() * options.batch));
    const std::int64_t classes = LossClasses(graph);
    for (float& v : labels_)
      v = static_cast<float>(std::uniform_int_distribution<std::int64_t>(0, classes - 1)(rng));
  }

  // One step; with `times`, each call's seconds appended: forward[op],
  // backward[op], the optimizer's, the whole step's.
  struct Times {
    std::vector<std::vector<double>> forward, backward;
    std::vector<double> optimizer, step;
  };
  void Step(int step, Times* times) {
    const std::size_t n = graph_.num_ops();
    const Clock::time_point step_start = Clock::now();
    rt_.SetStep(step);
    if (rt_.reads_data()) rt_.SetInput(0, x_.data());
    if (rt_.holds_loss()) rt_.SetLabels(0, labels_.data());
    for (OpId v = 0; v < n; ++v) {
      const Clock::time_point t = Clock::now();
      rt_.Forward(v, 0);
      backend_.Synchronize();
      if (times) times->forward[v].push_back(Since(t));
    }
    for (OpId v = n; v-- > 0;) {
      const Clock::time_point t = Clock::now();
      rt_.Backward(v, 0);
      backend_.Synchronize();
      if (times) times->backward[v].push_back(Since(t));
    }
    const Clock::time_point t = Clock::now();
    optimizer_.Step(rt_.params(), rt_.grads());
    rt_.ZeroGrads();
    backend_.Synchronize();
    if (times) {
      times->optimizer.push_back(Since(t));
      times->step.push_back(Since(step_start));
    }
  }
  std::int64_t num_params() const { return rt_.num_params(); }

 private:
  static RuntimeOptions Runtime(const OpProfileOptions& o) {
    RuntimeOptions ro;
    ro.micro_batch = o.batch;
    ro.seed = o.seed;
    return ro;
  }
  const models::ModelGraph& graph_;
  Backend& backend_;
  ModelRuntime rt_;
  Optimizer optimizer_;
  std::vector<float> x_, labels_;
};

}  // namespace

OpProfile ProfileOps(const models::ModelGraph& graph, Backend& backend,
                     const OpProfileOptions& options, const OpProfileProgress& progress) {
  DTSIM_CHECK(options.batch >= 1 && options.timed_steps >= 1 && options.warmup_steps >= 0 &&
                  options.concurrent >= 1,
              "bad profile options");
  DTSIM_CHECK(options.concurrent == 1 || options.make_backend, "concurrent copies need backends");
  if (const std::string why = ModelRuntime::UnsupportedOps(graph); !why.empty())
    throw UserError(why, "profile a model whose ops all have kernels here");
  StepRunner timed(graph, backend, options);
  const std::size_t n = graph.num_ops();
  StepRunner::Times times;
  times.forward.resize(n);
  times.backward.resize(n);
  const int planned = options.warmup_steps + options.timed_steps;
  const int most = std::max(planned, options.warmup_steps + options.max_steps);
  // Set by the timed thread before each step's barrier, read after it.
  std::atomic<bool> more{true};

  // The companions run the same steps on their own threads, each step
  // started together with the timed one's.
  std::barrier sync(options.concurrent);
  std::vector<std::thread> companions;
  std::exception_ptr failed;
  std::mutex failed_mu;
  for (int c = 1; c < options.concurrent; ++c) {
    companions.emplace_back([&] {
      try {
        const std::unique_ptr<Backend> own = options.make_backend();
        StepRunner runner(graph, *own, options);
        for (int step = 0;; ++step) {
          sync.arrive_and_wait();
          if (!more.load()) break;
          runner.Step(step, nullptr);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(failed_mu);
        failed = std::current_exception();
        sync.arrive_and_drop();
      }
    });
  }
  double timed_s = 0;
  for (int step = 0;; ++step) {
    const bool go = step < planned || (step < most && timed_s < options.min_timed_seconds);
    more.store(go);
    if (options.concurrent > 1) sync.arrive_and_wait();
    if (!go) break;
    const Clock::time_point start = Clock::now();
    timed.Step(step, step >= options.warmup_steps ? &times : nullptr);
    const double seconds = Since(start);
    if (step >= options.warmup_steps) timed_s += seconds;
    if (progress) progress(step + 1, std::max(planned, step + 1), seconds);
  }
  for (std::thread& t : companions) t.join();
  if (failed) std::rethrow_exception(failed);
  const std::vector<std::vector<double>>& forward = times.forward;
  const std::vector<std::vector<double>>& backward = times.backward;
  const std::vector<double>& optimizer_s = times.optimizer;
  const std::vector<double>& step_s = times.step;

  OpProfile profile;
  const double b = static_cast<double>(options.batch);
  std::map<std::string, std::size_t> index;  // signature -> entry
  std::vector<std::vector<double>> entry_forward, entry_backward;
  for (OpId v = 0; v < n; ++v) {
    const models::Op& op = graph.op(v);
    if (op.kind == OpKind::kInput) continue;
    const std::string signature = config::OpSignature(op);
    auto [it, added] = index.emplace(signature, profile.entries.size());
    if (added) {
      config::OpCostEntry e;
      e.signature = signature;
      e.kind = op.kind;
      e.batch = options.batch;
      e.name = op.name;
      e.occurrences = 0;
      e.backward_input = !graph.ReadsOnlyGraphInputs(v);
      e.forward_flops = op.fwd_flops * b;
      e.backward_flops = ((e.backward_input ? op.bwd_input_flops : 0) + op.bwd_weight_flops) * b;
      e.forward_bytes = op.FwdBytes(b);
      e.backward_bytes = op.BwdBytes(b);
      profile.entries.push_back(std::move(e));
      entry_forward.emplace_back();
      entry_backward.emplace_back();
    }
    const std::size_t i = it->second;
    ++profile.entries[i].occurrences;
    entry_forward[i].insert(entry_forward[i].end(), forward[v].begin(), forward[v].end());
    entry_backward[i].insert(entry_backward[i].end(), backward[v].begin(), backward[v].end());
  }
  for (std::size_t i = 0; i < profile.entries.size(); ++i) {
    profile.entries[i].forward = config::TimingOf(entry_forward[i]);
    profile.entries[i].backward = config::TimingOf(entry_backward[i]);
  }
  profile.optimizer.name = OptimizerAlgorithmName(options.optimizer.algorithm);
  profile.optimizer.params = std::max<std::int64_t>(1, timed.num_params());
  profile.optimizer.seconds = config::TimingOf(optimizer_s);
  profile.step_s = config::TimingOf(step_s).median_s;
  return profile;
}

}  // namespace dtsim::exec

#include "exec/calibrate/op_profile.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

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

}  // namespace

OpProfile ProfileOps(const models::ModelGraph& graph, Backend& backend,
                     const OpProfileOptions& options, const OpProfileProgress& progress) {
  DTSIM_CHECK(options.batch >= 1 && options.timed_steps >= 1 && options.warmup_steps >= 0,
              "bad profile options");
  if (const std::string why = ModelRuntime::UnsupportedOps(graph); !why.empty())
    throw UserError(why, "profile a model whose ops all have kernels here");
  RuntimeOptions ro;
  ro.micro_batch = options.batch;
  ro.seed = options.seed;
  ModelRuntime rt(graph, backend, ro);
  Optimizer optimizer(backend, rt.num_params(), options.optimizer);

  // A batch like exec's synthetic ones: token ids below the vocabulary, or
  // uniform values in [0, 1); labels below the loss's class count.
  std::mt19937_64 rng(options.seed);
  std::vector<float> x(static_cast<std::size_t>(rt.input_elements() * options.batch));
  const std::int64_t vocab = TokenVocabulary(graph);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (float& v : x) {
    v = vocab > 0 ? static_cast<float>(std::uniform_int_distribution<std::int64_t>(0, vocab - 1)(rng))
                  : uniform(rng);
  }
  std::vector<float> labels(static_cast<std::size_t>(rt.label_elements() * options.batch));
  const std::int64_t classes = LossClasses(graph);
  for (float& v : labels)
    v = static_cast<float>(std::uniform_int_distribution<std::int64_t>(0, classes - 1)(rng));

  const std::size_t n = graph.num_ops();
  std::vector<std::vector<double>> forward(n), backward(n);
  std::vector<double> optimizer_s, step_s;
  const int total = options.warmup_steps + options.timed_steps;
  for (int step = 0; step < total; ++step) {
    const bool timed = step >= options.warmup_steps;
    const Clock::time_point step_start = Clock::now();
    rt.SetStep(step);
    if (rt.reads_data()) rt.SetInput(0, x.data());
    if (rt.holds_loss()) rt.SetLabels(0, labels.data());
    for (OpId v = 0; v < n; ++v) {
      const Clock::time_point t = Clock::now();
      rt.Forward(v, 0);
      backend.Synchronize();
      if (timed) forward[v].push_back(Since(t));
    }
    for (OpId v = n; v-- > 0;) {
      const Clock::time_point t = Clock::now();
      rt.Backward(v, 0);
      backend.Synchronize();
      if (timed) backward[v].push_back(Since(t));
    }
    const Clock::time_point t = Clock::now();
    optimizer.Step(rt.params(), rt.grads());
    rt.ZeroGrads();
    backend.Synchronize();
    if (timed) optimizer_s.push_back(Since(t));
    const double seconds = Since(step_start);
    if (timed) step_s.push_back(seconds);
    if (progress) progress(step + 1, total, seconds);
  }

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
  profile.optimizer.params = std::max<std::int64_t>(1, rt.num_params());
  profile.optimizer.seconds = config::TimingOf(optimizer_s);
  profile.step_s = config::TimingOf(step_s).median_s;
  return profile;
}

}  // namespace dtsim::exec

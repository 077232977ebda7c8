#include "study/tta_proxy.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "common/error.h"
#include "common/parallel_for.h"
#include "exec/data/model_datasets.h"
#include "exec/kernels/cpu_isa.h"
#include "exec/replicas/model_problem.h"

namespace dtsim::study {

std::map<Family, std::vector<int>> MeasuredSettings(const std::vector<TtaPoint>& points,
                                                    const std::vector<int>& workers) {
  std::map<Family, std::vector<int>> measured;
  for (const TtaPoint& p : points) {
    if (!p.infeasible.empty()) continue;
    std::vector<int>& w = measured[p.family];
    if (workers.empty()) w.push_back(p.workers);
  }
  for (auto& [family, w] : measured) {
    if (!workers.empty()) w = workers;
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
  }
  return measured;
}

std::vector<TtaRun> PlanRuns(const std::map<Family, std::vector<int>>& measured, const Proxy& proxy,
                             const TtaOptions& o) {
  std::vector<TtaRun> runs;
  for (const auto& [family, ws] : measured) {
    for (int w : ws) {
      const std::vector<double> rates =
          proxy.grid.empty() ? std::vector<double>{ScaledLr(o, family, w, proxy.batch, proxy.rule)}
                             : proxy.grid;
      for (double rate : rates) {
        for (int seed = 1; seed <= o.seeds; ++seed) runs.push_back({family, w, rate, seed, {}});
      }
    }
  }
  return runs;
}

void CheckProxyCost(const models::ModelGraph& graph, const Proxy& proxy,
                    const std::vector<TtaRun>& runs, const TtaOptions& o, std::ostream& err) {
  const models::GraphTotals t = graph.Totals();
  const auto batch = static_cast<double>(proxy.batch);
  const double at_once =
      std::min<double>(static_cast<double>(runs.size()),
                       o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency()));
  double largest_run_bytes = 0, flops = 0;
  for (const TtaRun& r : runs) {
    const double w = r.workers;
    largest_run_bytes = std::max(largest_run_bytes, (w + 1) * static_cast<double>(t.params) * 12 +
                                                        batch * t.saved_elements * 4);
    flops += static_cast<double>(o.steps) * w * batch * 3 * t.fwd_flops;
    // Evaluations: every eval_every updates and at the end, a forward pass
    // over eval_samples.
    flops += (static_cast<double>(o.steps) / o.eval_every + 1) *
             static_cast<double>(o.eval_samples) * t.fwd_flops;
  }
  const double bytes = largest_run_bytes * at_once;
  char line[400];
  if (bytes > kMaxTtaMemoryBytes) {
    std::snprintf(line, sizeof line,
                  "the proxy %s (%.3g parameters) would take about %.3g GiB for %.0f run(s) at "
                  "once, more than the %.0f GiB dtsim tta trains in memory",
                  proxy.name.c_str(), static_cast<double>(t.params), bytes / (1ull << 30), at_once,
                  kMaxTtaMemoryBytes / (1ull << 30));
    throw UserError(line,
                    "use a small proxy (--proxy mnist-mlp or cifar10-cnn), fewer --workers, "
                    "a smaller --batch or fewer --jobs");
  }
  if (flops > kMaxTtaFlops) {
    std::snprintf(line, sizeof line,
                  "the proxy runs would take about %.3g FLOPs of training, more than the %.0e "
                  "dtsim tta allows (about a day on one core)",
                  flops, kMaxTtaFlops);
    throw UserError(line, "fewer --steps, --seeds or --workers, a smaller --batch or proxy");
  }
  if (!o.quiet) {
    std::snprintf(line, sizeof line,
                  "estimate: about %.3g GFLOPs of proxy training, %.3g MiB per run\n", flops / 1e9,
                  largest_run_bytes / (1 << 20));
    err << line;
  }
}

namespace {

// Trains run `r`: its own data, backend and model; `test_data` is read by
// all runs at once.
void TrainProxyRun(const models::ModelGraph& graph, const Proxy& proxy, const TtaOptions& o,
                   const exec::Dataset* test_data, TtaRun& r) {
  // The seed as `dtsim exec` uses a scenario's: the data's order and the
  // parameters' initialisation.
  const std::unique_ptr<exec::Dataset> data =
      exec::MakeDataset(graph, o.dataset, static_cast<std::uint64_t>(r.seed));
  const std::unique_ptr<exec::Backend> cpu = exec::MakeCpuBackend(exec::BestCpuIsa());
  exec::ModelProblemOptions po;
  po.batch = proxy.batch;
  po.eval_samples = o.eval_samples;
  po.seed = static_cast<std::uint64_t>(r.seed);
  if (test_data != nullptr) {
    // Data parallelism and local SGD evaluate the test split's first
    // eval_samples in one share per replica; parameter servers on one
    // worker (exec/runtime/plan_executor.cc).
    const bool shared =
        r.family.mode == exec::SyncMode::kSynchronous || r.family.mode == exec::SyncMode::kLocalSgd;
    po.eval_shards = shared ? r.workers : 1;
  } else {
    // Held out: the dataset's last samples (training reads from 0 up).
    po.eval_first = std::max<std::int64_t>(0, data->size() - o.eval_samples);
  }
  exec::ModelProblem problem(graph, *data, *cpu, po, test_data);
  exec::ReplicaRunOptions ro;
  ro.steps = o.steps;
  ro.eval_every = o.eval_every;
  // The rest of the curve does not change the estimate.
  switch (proxy.target.kind) {
    case Target::Kind::kFraction: ro.stop_at_fraction = proxy.target.value; break;
    case Target::Kind::kLoss: ro.stop_at_loss = proxy.target.value; break;
    case Target::Kind::kAccuracy: ro.stop_at_accuracy = proxy.target.value; break;
  }
  ro.divergence_is_result = true;  // a diverging setting does not reach the target
  r.curve = exec::TrainReplicas(problem, *cpu,
                                SettingOf(r.family, r.workers, r.lr, proxy.batch, proxy.rule), ro);
}

}  // namespace

void TrainProxyRuns(const models::ModelGraph& graph, const Proxy& proxy, const TtaOptions& o,
                    const exec::Dataset* test_data, std::vector<TtaRun>* runs) {
  const std::optional<ParallelFailure> failure =
      ParallelFor(runs->size(), o.jobs, {}, 1.0,
                  [&](std::size_t i) { TrainProxyRun(graph, proxy, o, test_data, (*runs)[i]); });
  if (failure) std::rethrow_exception(failure->error);
}

std::map<Family, Measured> EstimateUpdates(const std::map<Family, std::vector<int>>& measured,
                                           const std::vector<TtaRun>& runs, const Target& target) {
  constexpr double kNoRate = std::numeric_limits<double>::quiet_NaN();
  std::map<Family, Measured> estimates;
  for (const auto& [family, ws] : measured) {
    for (int w : ws) {
      std::map<double, std::vector<sim::LossPoints>> by_rate;  // ascending rates
      for (const TtaRun& r : runs) {
        if (r.family.Key() == family.Key() && r.workers == w)
          by_rate[r.lr].push_back(target.Points(r.curve));
      }
      sim::StepsEstimate best;
      double best_lr = kNoRate;
      for (const auto& [rate, seeds] : by_rate) {
        const sim::StepsEstimate e = sim::EstimateSteps(seeds, target.Threshold());
        if (e.valid() ? !best.valid() || e.mean < best.mean
                      : !best.valid() && (best.seeds == 0 || e.reached > best.reached)) {
          best = e;
          best_lr = e.valid() ? rate : kNoRate;
        }
      }
      Measured& m = estimates[family];
      m.workers.push_back(w);
      m.steps.push_back(best);
      m.lr.push_back(best_lr);
    }
  }
  return estimates;
}

}  // namespace dtsim::study

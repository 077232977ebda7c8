// Wall time of the two engines on the same plan: ResNet-50 data parallel
// with ring all-reduce, 2 iterations, every rank materialized (SimGrid
// simulates every rank; the analytic engine is given the same full plan,
// without the symmetric shortcut the simulator takes for identical
// workers), at 8 to 1,024 GPUs. Only the engine run is timed: the plan is
// built and priced once per size. The SimGrid figure includes its fork and
// the result's trip back through the pipe; its counter child_cpu_ms (the
// child's user + system CPU time per run) is the figure to trust on a
// loaded machine, where wall time also counts waiting for a core.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "bench/resnet50_scenario.h"
#include "config/scenario.h"
#include "sim/cost/plan_costs.h"
#include "sim/engine/simgrid_engine.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

config::Scenario ResNet50(int gpus) { return bench::ResNet50Scenario(gpus, 2); }

struct PricedPlan {
  plan::Plan plan;
  TaskCosts costs;
  NetworkSpec spec;
};

PricedPlan Build(int gpus) {
  const config::Scenario s = ResNet50(gpus);
  const auto catalog = config::ScenarioCatalog(s);
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  PricedPlan p;
  p.spec = MakeNetworkSpec(s, catalog);
  p.plan = MakePlan(s, graph);  // all ranks materialized
  Network network(p.spec);
  const std::vector<CostModel> models{
      CostModel(*catalog.FindDevice(s.cluster.device), s.workload.precision, {})};
  const std::vector<int> cost_of_rank(static_cast<std::size_t>(p.plan.num_ranks()), 0);
  p.costs = PriceTasks(p.plan, graph, models, cost_of_rank, network);
  return p;
}

void Report(benchmark::State& state, const PricedPlan& p, const EngineResult& last) {
  state.counters["tasks"] = static_cast<double>(p.plan.num_tasks());
  state.counters["events"] = static_cast<double>(last.events);
  state.counters["makespan_ms"] = static_cast<double>(last.makespan) / 1e6;
}

void BM_AnalyticEngine(benchmark::State& state) {
  const PricedPlan p = Build(static_cast<int>(state.range(0)));
  EngineResult result;
  for (auto _ : state) {
    result = RunEngine(p.plan, p.costs);
    benchmark::DoNotOptimize(result.makespan);
  }
  Report(state, p, result);
}

// CPU time (user + system) of this process's waited-for children, seconds.
double ChildrenCpuSeconds(const rusage& u) {
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

void BM_SimgridEngine(benchmark::State& state) {
  const PricedPlan p = Build(static_cast<int>(state.range(0)));
  EngineResult result;
  rusage before{}, after{};
  getrusage(RUSAGE_CHILDREN, &before);
  for (auto _ : state) {
    result = RunSimgridEngine(p.plan, p.costs, p.spec);
    benchmark::DoNotOptimize(result.makespan);
  }
  getrusage(RUSAGE_CHILDREN, &after);
  Report(state, p, result);
  state.counters["child_cpu_ms"] = 1e3 * (ChildrenCpuSeconds(after) - ChildrenCpuSeconds(before)) /
                                   static_cast<double>(state.iterations());
  // The largest SimGrid child so far (sizes run in increasing order, so
  // this one's), in MB.
  state.counters["child_max_rss_mb"] = static_cast<double>(after.ru_maxrss) / 1024;
}

BENCHMARK(BM_AnalyticEngine)
    ->Arg(8)->Arg(32)->Arg(128)->Arg(512)->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SimgridEngine)
    ->Arg(8)->Arg(32)->Arg(128)->Arg(512)->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace dtsim::sim

BENCHMARK_MAIN();

// Wall time of simulating one iteration of ResNet-50 data parallel with ring
// all-reduce, from the model graph to the metrics (plan build, pricing,
// engine run, metrics), at 64 to 4,096 GPUs. Target: the 1,024-GPU
// iteration in under 1 second on one core.
#include <benchmark/benchmark.h>

#include "bench/resnet50_scenario.h"
#include "config/scenario.h"
#include "sim/metrics.h"
#include "sim/cost/plan_costs.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

config::Scenario ResNet50(int gpus) { return bench::ResNet50Scenario(gpus, 1); }

void BM_ResNet50DataParallelIteration(benchmark::State& state) {
  const config::Scenario s = ResNet50(static_cast<int>(state.range(0)));
  const auto catalog = config::ScenarioCatalog(s);
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  const CostModel cost_model(*catalog.FindDevice(s.cluster.device), s.workload.precision, {});
  const NetworkSpec spec = MakeNetworkSpec(s, catalog);
  std::uint64_t events = 0, tasks = 0;
  for (auto _ : state) {
    const plan::Plan plan = MakePlan(s, graph);
    Network network(spec);
    const std::vector<CostModel> models{cost_model};
    const std::vector<int> cost_of_rank(static_cast<std::size_t>(plan.num_ranks()), 0);
    const TaskCosts costs = PriceTasks(plan, graph, models, cost_of_rank, network);
    const EngineResult result = RunEngine(plan, costs);
    const RunMetrics metrics = ComputeMetrics(plan, result);
    benchmark::DoNotOptimize(metrics.step_time_s);
    events += result.events;
    tasks += plan.num_tasks();
  }
  state.counters["tasks"] = benchmark::Counter(static_cast<double>(tasks),
                                               benchmark::Counter::kAvgIterations);
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ResNet50DataParallelIteration)
    ->Arg(64)->Arg(256)->Arg(1024)->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One point of a sweep: Simulate() with the fast symmetric path (one worker,
// one iteration of each kind) for local SGD with H = 10, graph prebuilt.
void BM_FastSimulateLocalSgd(benchmark::State& state) {
  config::Scenario s = ResNet50(static_cast<int>(state.range(0)));
  s.parallelism.strategy = config::Strategy::kLocalSgd;
  s.parallelism.averaging_period = 10;
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  for (auto _ : state) {
    const Prediction p = Simulate(s, {.graph = &graph, .fast = true});
    benchmark::DoNotOptimize(p.metrics.step_time_s);
  }
  state.counters["points_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FastSimulateLocalSgd)->Arg(8)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace dtsim::sim

BENCHMARK_MAIN();

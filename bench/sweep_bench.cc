// Points simulated per second by a sweep (study/sweep.h): ResNet-50 local SGD
// (data parallel, averaging every H steps) on 8 to 1,024 V100 GPUs (34 node
// counts of 8 GPUs, 1 to 128 nodes) x 6 averaging periods = 204 points, run
// by RunSweep on `jobs` threads (0 = all cores). Files are not written.
// Target: >= 1,000 points/s on 2 cores.
//
// BM_Search: `dtsim search` of GPT-3 175B on 1,024 A100s (128 nodes of 8,
// HDR InfiniBand fat tree), global batch 1,536, every default plan
// (study/search.h): plans enumerated, dropped by the memory bound, simulated
// per second. The target: the whole search in under a minute on 2
// cores.
#include <benchmark/benchmark.h>

#include <string>

#include "config/scenario.h"
#include "study/search.h"
#include "study/sweep.h"

namespace dtsim::study {
namespace {

const char* kSweep =
    "name: sweep-bench\n"
    "cluster:\n"
    "  nodes: [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 36, 40, 44, 48,\n"
    "          52, 56, 60, 64, 68, 72, 76, 80, 88, 96, 104, 112, 120, 128]\n"
    "  devices_per_node: 8\n"
    "  device: V100-SXM2-32GB\n"
    "  intra_node_link: nvlink2\n"
    "  network: {link: 25GbE}\n"
    "workload: {model: resnet50, batch_per_device: 64, precision: fp16, iterations: 5}\n"
    "parallelism:\n"
    "  strategy: local_sgd\n"
    "  averaging_period: [1, 2, 5, 10, 20, 50]\n";

// Simulation only: the sweep is expanded once, outside the timed loop.
void BM_SweepRun(benchmark::State& state) {
  const Sweep sweep = ParseSweep(kSweep, "sweep-bench.yaml");
  SweepRunOptions options;
  options.jobs = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const std::vector<PointResult> results = RunSweep(sweep, options);
    benchmark::DoNotOptimize(results.back().throughput_samples_per_s);
  }
  state.counters["points"] = static_cast<double>(sweep.points.size());
  state.counters["points_per_s"] = benchmark::Counter(
      static_cast<double>(sweep.points.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepRun)->ArgName("jobs")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Expansion: YAML -> 204 loaded scenarios (one thread).
void BM_SweepExpand(benchmark::State& state) {
  std::size_t points = 0;
  for (auto _ : state) {
    const Sweep sweep = ParseSweep(kSweep, "sweep-bench.yaml");
    points = sweep.points.size();
    benchmark::DoNotOptimize(points);
  }
  state.counters["points_per_s"] = benchmark::Counter(
      static_cast<double>(points) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepExpand)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Search(benchmark::State& state) {
  const config::Scenario s = config::ParseScenario(
      "name: search-bench\n"
      "cluster:\n"
      "  nodes: 128\n"
      "  devices_per_node: 8\n"
      "  device: A100-SXM4-80GB\n"
      "  intra_node_link: nvswitch-a100\n"
      "  network: {link: ib-hdr, nics_per_node: 8, topology: fat_tree, nodes_per_leaf: 16}\n"
      "workload: {model: gpt3-175b, precision: fp16, iterations: 1}\n"
      "parallelism: {strategy: hybrid, tensor_parallel: 8, pipeline_parallel: 16,\n"
      "              global_batch: 1536, optimizer: adam}\n",
      "search-bench.yaml");
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  SearchSpace space;
  space.devices = {1024};
  std::size_t simulated = 0;
  for (auto _ : state) {
    const Search search = BuildSearch(s, graph, space);
    const std::vector<PointResult> results = RunSweep(search.sweep);
    simulated = results.size();
    state.counters["enumerated"] = static_cast<double>(search.counts.candidates);
    benchmark::DoNotOptimize(results.back().throughput_samples_per_s);
  }
  state.counters["simulated"] = static_cast<double>(simulated);
  state.counters["plans_per_s"] = benchmark::Counter(
      static_cast<double>(simulated) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Search)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace dtsim::study

BENCHMARK_MAIN();

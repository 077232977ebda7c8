// A whole 3D (tensor x pipeline x data) step on the SimGrid engine, every
// rank materialized: GPT-3 175B in Megatron-LM's layout (t = 8 inside each
// 8-GPU node, interleaved 1F1B with 2 chunks per device, activation
// recomputation, A100 80 GB nodes on HDR InfiniBand with one NIC per GPU,
// as scenarios/gpt3-175b-3d-1536xA100.yaml) at p = 12 and m = p = 12
// micro-batches per replica, from 96 GPUs (one replica) to 1,536 (16
// replicas). Timed: Simulate() as `dtsim run` calls it (plan build, pricing,
// the forked SimGrid child, metrics), in coarse mode (max_step_repeats 1:
// each ring collective one step of flows) and step by step (the default
// 64). Counters: tasks, SimGrid events, the step (s), the analytic
// engine's step for the same scenario (s), and the largest SimGrid child's
// memory (MB).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// REQUIRES: gpus a multiple of 96 (t x p).
config::Scenario Gpt3ThreeD(int gpus, int max_step_repeats) {
  config::Scenario s;
  s.name = "gpt3-175b-3d";
  s.cluster.nodes = gpus / 8;
  s.cluster.devices_per_node = 8;
  s.cluster.device = "A100-SXM4-80GB";
  s.cluster.intra_node_link = "nvswitch-a100";
  s.cluster.network.link = "ib-hdr";
  s.cluster.network.nics_per_node = 8;
  s.cluster.network.topology = config::Topology::kFatTree;
  s.cluster.network.nodes_per_leaf = 16;
  s.workload.model.zoo_name = "gpt3-175b";
  s.workload.precision = hw::Precision::kFp16;
  s.workload.iterations = 1;
  s.parallelism.strategy = config::Strategy::kHybrid;
  config::HybridConfig& h = s.parallelism.hybrid;
  h.tensor_parallel = 8;
  h.pipeline_parallel = 12;
  h.micro_batch_size = 1;
  h.global_batch = gpus / 96 * 12;  // m = p = 12 micro-batches per replica
  h.schedule = config::PipelineSchedule::kInterleaved;
  h.virtual_stages = 2;
  h.even_layers = true;
  s.parallelism.recompute = true;
  s.engine = "simgrid";
  s.simgrid.max_step_repeats = max_step_repeats;
  return s;
}

void BM_Simgrid3DStep(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const config::Scenario s = Gpt3ThreeD(gpus, static_cast<int>(state.range(1)));
  Prediction p;
  for (auto _ : state) {
    p = Simulate(s);
    benchmark::DoNotOptimize(p.metrics.step_time_s);
  }
  config::Scenario analytic = s;
  analytic.engine = "analytic";
  state.counters["tasks"] = static_cast<double>(p.plan.num_tasks());
  state.counters["events"] = static_cast<double>(p.engine.events);
  state.counters["step_s"] = p.metrics.step_time_s;
  state.counters["analytic_step_s"] = Simulate(analytic).metrics.step_time_s;
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  state.counters["child_max_rss_mb"] = static_cast<double>(u.ru_maxrss) / 1024;
}

BENCHMARK(BM_Simgrid3DStep)
    ->ArgNames({"gpus", "max_step_repeats"})
    ->Args({96, 1})->Args({384, 1})->Args({1536, 1})
    ->Args({96, 64})->Args({384, 64})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace dtsim::sim

BENCHMARK_MAIN();

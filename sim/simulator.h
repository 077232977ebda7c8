// The simulator's public entry point: from a scenario to a prediction.
//
//   scenario --(models/)--> model graph --(plan/)--> plan
//            --(cost model, network)--> task costs --(engine)--> timeline
//            --(metrics)--> step time, throughput, breakdown
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.h"
#include "models/graph.h"
#include "plan/hybrid.h"
#include "plan/plan.h"
#include "sim/async_figures.h"
#include "sim/context_figures.h"
#include "sim/server_loads.h"
#include "sim/engine/engine.h"
#include "sim/hybrid_setup.h"
#include "sim/failures.h"
#include "sim/memory.h"
#include "sim/metrics.h"
#include "sim/network/network.h"
#include "sim/node_groups.h"
#include "sim/statistics.h"

namespace dtsim::sim {

// How the throughput scales: against the same per-device work on one
// device of the cluster's type, alone (no communication, no stragglers):
// efficiency = throughput / (devices x single_device_throughput). The
// reference per strategy (docs/scenario.md, "Scaling efficiency"):
//   data, local_sgd, parameter_server: one device training
//     batch_per_device samples per step, as data parallelism on 1 device;
//   hybrid: one device running one replica's batch (global_batch / d
//     samples as micro-batches of micro_batch_size) with t = p = 1;
//   model: one device running the whole model at batch_per_device.
// So a run on one device is 100% by construction (simulator_test).
struct Scaling {
  double single_device_throughput_samples_per_s = 0;
  double efficiency = 0;   // a fraction (1 = linear scaling)
  std::string reference;   // the reference in words, for the report
};

// What the prediction priced with, in words for the report.
struct Setup {
  std::string cost_model;  // "kernels" or "roofline": how compute was priced
  // The factor compute carries for the slowest of the synchronised GPUs
  // (sim/cost/slowest_gpu.h); 1 for one GPU or no spread.
  double slowest_gpu_pace = 1;
  // The framework profile and input pipeline in words ("pytorch-eager,
  // input imagenet-224 on 8 cores"), when either adds host-side costs.
  std::string framework;
  // The transports in words when one is not native ("between nodes grpc
  // (...); within nodes native"); "" otherwise.
  std::string transport;
};

// Memory of one device per pipeline stage (one entry without pipelining)
// at its peak, and the device's capacity.
struct Memory {
  std::vector<MemoryBreakdown> stages;
  std::vector<plan::RankId> stage_rank;  // a device of each stage
  double capacity_bytes = 0;
  bool recompute = false;            // activations kept per layer input only
  bool recompute_per_stage = false;  // ... per stage input (GPipe), MemoryInputs
  bool recompute_selective = false;  // attention's core only, MemoryInputs
};

// What crosses the network and how often the replicas synchronise.
struct Communication {
  // Bytes all ranks send over links per training sample (mean over the
  // measured window).
  double network_bytes_per_sample = 0;
  // local_sgd: parameters averaged every this many steps; time of one
  // averaging round (H steps). data: 1 and the step time.
  int averaging_period = 1;
  double averaging_round_s = 0;
  // Parameter-server plans: each server's elements, bytes and link time per
  // measured step (sim/server_loads.h); empty otherwise.
  std::vector<ServerLoad> server_loads;
  // Context parallelism's transfers (degree 1: none).
  ContextComm context;
};

// How the work was laid out on the devices.
struct Layout {
  int materialized_workers = 0;  // workers simulated one by one (the rest are identical, see plan.h)
  int pipeline_stages = 1;       // p (1 without pipelining)
  int tensor_parallel = 1;       // t
  int context_parallel = 1;      // c (plan/context_parallel.h)
  // schedule pipedream: devices per stage (each stage's weight versions and
  // staleness follow, plan::PipeDreamInFlight), and how the stages were chosen.
  std::vector<int> stage_replicas;
  std::string partition_note;
  // Pipelined plans: the options the plan was built with (partition,
  // schedule, micro-batches).
  plan::HybridOptions hybrid;
  // The pipelines' fast path (SimulateOptions::fast): the two numbers of
  // micro-batches simulated, from which the figures were extrapolated (the
  // plan, engine and timeline are those of the first); {0, 0} otherwise.
  std::pair<int, int> extrapolated_from{0, 0};
};

struct JobRun;  // below: one job of a scenario with several

struct Prediction {
  models::ModelGraph graph;  // the graph the plan's tasks refer to (one tensor rank's share)
  models::GraphTotals model_totals;  // of the whole model
  // Tokens per sample of a language model (its input feeds an embedding:
  // the sequence length); 0 for other models.
  double tokens_per_sample = 0;
  plan::Plan plan;
  EngineResult engine;
  RunMetrics metrics;  // throughput, step time and its breakdown
  TaskCosts costs;
  hw::DeviceSpec device;
  NetworkSpec network;
  Scaling scaling;
  Setup setup;
  Memory memory;
  Communication comm;
  Layout layout;
  // Why the plan gets no number (the first stage that does not fit in
  // memory, ...); "" when it runs.
  std::string does_not_fit;
  // Set when the peak memory is within the memory model's margin of the
  // capacity (sim/memory.h, MemoryVerdict::kTight) and the scenario does
  // not refuse such plans: the prediction stands, with this warning.
  std::string memory_warning;
  // local_sgd with parallelism.post_local_steps: the synchronous phase
  // (data parallelism over the same cluster: gradients all-reduced every
  // step) that runs before local SGD; the figures above are local SGD's.
  struct PostLocal {
    int synchronous_steps = 0;
    double synchronous_step_s = 0;
    double synchronous_throughput_samples_per_s = 0;
    double synchronous_phase_s = 0;  // steps x step time
  };
  std::optional<PostLocal> post_local;
  std::optional<AsyncFigures> async;
  std::optional<GoodputResult> failures;
  // Mixed clusters (cluster.node_groups): each group's placement, batch and
  // time per step; empty otherwise.
  std::vector<GroupFigures> groups;
  double wall_seconds = 0;  // host time spent simulating (not part of reports)
  // A scenario with jobs (config::Scenario::jobs): each job's run on the
  // shared cluster (sim/jobs.h); the figures above are then the first job's.
  std::vector<JobRun> jobs;
};

// One job of a scenario with several, run on the shared cluster.
struct JobRun {
  std::string name;
  double start_s = 0;
  std::vector<int> nodes;           // the cluster's nodes it ran on
  std::vector<plan::RankId> ranks;  // the shared cluster's rank of each of its ranks
  // The job's own prediction (its plan, graph, costs, memory, ...), with
  // engine and metrics from the shared run, times counted from its start.
  Prediction shared;
  RunMetrics alone;   // the job alone on the same nodes (same engine)
  double slowdown = 0;  // shared step time / alone step time
};

struct SimulateOptions {
  // The workload's model graph, already built (e.g. shared by the points of
  // a sweep); nullptr = build it from the scenario. Must be what
  // config::BuildWorkloadModel(scenario) returns; must outlive the call.
  const models::ModelGraph* graph = nullptr;
  // For scenarios whose workers are all alike (data parallel or local SGD
  // over all-reduce, no stragglers): simulate one worker and one iteration
  // of each kind (with and without averaging) and compose them. Gives the
  // same step time and breakdown as the full simulation (sim_test checks),
  // at a fraction of the cost; the timeline then holds one worker and two
  // iterations. Sweeps use it. Pipelines of GPipe, 1F1B or interleaved
  // 1F1B with M >= 4p micro-batches: simulated with 2p and 3p micro-batches
  // and extrapolated linearly to M (the step repeats one pattern per
  // micro-batch once the pipeline is full; Prediction::extrapolated_from).
  bool fast = false;
  // Pipelines whose chunks are balanced within memory: balance them for
  // this many micro-batches per replica instead of the scenario's (0). The
  // fast path simulates fewer micro-batches with the partition of M.
  int partition_micro_batches = 0;
  // Pipelined (hybrid) plans: materialize every rank even where one rank per
  // stage could stand for its replicas and tensor group (the plan the
  // SimGrid engine and stragglers need). Same figures on the analytic
  // engine, at t x d times the cost; for checking that equivalence.
  bool materialize_all = false;
};

// Everything the engine needs that comes from the scenario and the catalog.
NetworkSpec MakeNetworkSpec(const config::Scenario& scenario, const hw::HardwareCatalog& catalog);
// `materialize` > 0: build only that many workers' tasks (symmetric plans).
// `batch_of_rank`: each data-parallel rank's batch (RankBatches; empty =
// even); nullptr = as the scenario's balance_batch gives them.
plan::Plan MakePlan(const config::Scenario& scenario, const models::ModelGraph& graph,
                    int materialize = 0, const std::vector<int>* batch_of_rank = nullptr);

// True when every worker of the scenario behaves the same (no stragglers,
// no servers): the plan may be built symmetric.
bool WorkersAreAlike(const config::Scenario& scenario);

// True when the analytic engine may build a pipelined (hybrid) plan with one
// materialized rank per stage, the others mirroring it: no stragglers, no
// link events, one engine that does not route every flow (not SimGrid).
// Simulate and the plan-size guard (sim/plan_size.h) both ask this.
bool HybridRanksMirror(const config::Scenario& scenario);

// Runs the scenario. Throws UserError for inputs that only turn out wrong
// here (e.g. a hierarchical all-reduce the cluster cannot do). Thread-safe:
// several scenarios may be simulated at once.
Prediction Simulate(const config::Scenario& scenario, const SimulateOptions& options = {});

}  // namespace dtsim::sim

#include "sim/simulator.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "common/error.h"
#include "plan/data_parallel.h"
#include "plan/hybrid.h"
#include "plan/pipedream.h"
#include "plan/layers.h"
#include "plan/parameter_server.h"
#include "sim/cost/collectives.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/flash_attention_table.h"
#include "sim/cost/host_costs.h"
#include "sim/cost/plan_costs.h"
#include "sim/plan_size.h"
#include "sim/engine/simgrid_engine.h"
#include "sim/jobs.h"
#include "sim/network/link_events.h"
#include "sim/engine/stragglers.h"

namespace dtsim::sim {
namespace {

using config::Strategy;

// GPUs that wait for each other every step: all of them, except
// asynchronous workers, which each run at their own pace.
std::int64_t SynchronisedGpus(const config::Scenario& s) {
  return s.parallelism.sync == config::SyncMode::kAsynchronous ? 1 : s.cluster.num_devices();
}

// How the workers' compute is priced, in the report's words.
void DescribePricing(const CostModel& workers, Setup* setup) {
  setup->cost_model = workers.kernels() != nullptr ? "kernels" : "roofline";
  if (workers.measured() != nullptr) setup->cost_model = "measured, else " + setup->cost_model;
  setup->slowest_gpu_pace = workers.pace();
}

// Throws UserError for a cluster.gpu_speed_spread that cannot change the
// answer (asynchronous workers).
CostModelOptions MakeCostOptions(const config::Scenario& s) {
  if (s.cluster.gpu_speed_spread && SynchronisedGpus(s) == 1 && s.cluster.num_devices() > 1)
    throw UserError(s.Where("cluster.gpu_speed_spread"),
                    "gpu_speed_spread prices the wait for the slowest GPU of a synchronous step, "
                    "and asynchronous workers do not wait for each other",
                    "remove it, or use sync: synchronous");
  const config::WorkloadConfig& w = s.workload;
  CostModelOptions o;
  o.synchronised_gpus = SynchronisedGpus(s);
  o.gpu_speed_spread = s.cluster.gpu_speed_spread;
  o.compute_efficiency = w.compute_efficiency;
  o.dense_efficiency_by_rows = w.dense_efficiency_by_rows;
  o.conv_efficiency_by_flops = w.conv_efficiency_by_flops;
  if (w.memory_efficiency) o.memory_efficiency = *w.memory_efficiency;
  if (w.kernel_launch_s) o.kernel_launch_s = *w.kernel_launch_s;
  if (w.optimizer_bytes_per_param) o.optimizer_bytes_per_param = *w.optimizer_bytes_per_param;
  o.kernel_model = config::UsesKernelModel(w);
  o.kernel_params.default_attention = w.framework.attention;
  o.kernel_efficiency = w.framework.kernel_efficiency;
  return o;
}

std::vector<models::OpId> AllOps(const models::ModelGraph& graph) {
  std::vector<models::OpId> ops;
  for (models::OpId v = 0; v < graph.num_ops(); ++v) ops.push_back(v);
  return ops;
}

// Full recomputation on a worker that holds the whole model: the ranges the
// memory model checkpoints (RecomputedRanges), re-run before their backward.
plan::RecomputeRanges WholeModelRecompute(const config::Scenario& s, const models::ModelGraph& graph) {
  if (s.parallelism.recompute_selective) return plan::AttentionCores(graph);
  if (!s.parallelism.recompute) return {};
  return RecomputedRanges(graph, AllOps(graph), 1);
}

// What local SGD's compression and outer optimizer add to an average.
struct AveragingCost {
  double bytes_scale = 1;               // of the parameters' bytes on the wire
  double convert_bytes_per_param = 0;   // quantize before, dequantize after
  double outer_bytes_per_param = 0;     // the outer optimizer's update
};

AveragingCost AveragingCostOf(const config::Scenario& s, const models::ModelGraph& graph) {
  AveragingCost c;
  // Bytes per element on the wire: fp16 2; int8 and int4 1 and 1/2, plus one
  // fp32 scale per block of 256 elements (blockwise absmax quantization, a
  // dtsim choice: 4/256 byte per element).
  double wire = 0;
  switch (s.parallelism.averaging_compression) {
    case config::AveragingCompression::kNone: break;
    case config::AveragingCompression::kFp16: wire = 2; break;
    case config::AveragingCompression::kInt8: wire = 1 + 4.0 / 256; break;
    case config::AveragingCompression::kInt4: wire = 0.5 + 4.0 / 256; break;
  }
  double param_bytes = 0, params = 0;
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    param_bytes += graph.op(v).ParamBytes();
    params += static_cast<double>(graph.op(v).params);
  }
  const double dtype = params > 0 ? param_bytes / params : 4;
  if (wire > 0 && wire < dtype) {
    c.bytes_scale = wire / dtype;
    // Quantize (read the parameters, write the wire format) and dequantize
    // (read it back, write the parameters).
    c.convert_bytes_per_param = 2 * (dtype + wire);
  }
  // Nesterov outer step over fp32 state: read and write the parameters, the
  // previous ones and the momentum.
  if (s.parallelism.outer_optimizer.enabled) c.outer_bytes_per_param = 6 * 4.0;
  return c;
}


// Local SGD needs whole averaging rounds in the measured window: one warm-up
// iteration, then enough rounds of H to cover the iterations asked for.
// Computed in 64 bits: with H near INT_MAX, 1 + rounds x H does not fit an
// int; such a count is refused rather than wrapped.
std::int64_t IterationsFor(const config::Scenario& s) {
  const std::int64_t h = config::AveragingPeriod(s);
  const std::int64_t asked = s.workload.iterations;
  if (h == 1) return asked;
  const std::int64_t rounds = std::max<std::int64_t>(1, (std::max<std::int64_t>(1, asked - 1) + h - 1) / h);
  return 1 + rounds * h;
}

int IterationsToSimulate(const config::Scenario& s) {
  const std::int64_t h = config::AveragingPeriod(s);
  const std::int64_t total = IterationsFor(s);
  if (h == 1) return static_cast<int>(total);
  // Plan task ids and iteration numbers are 32-bit.
  constexpr std::int64_t kMaxIterations = 1'000'000;
  if (total > kMaxIterations)
    throw UserError("local SGD with averaging_period " + std::to_string(h) + " needs " +
                        std::to_string(total) + " simulated iterations (one warm-up, then whole "
                        "averaging rounds), more than the " + std::to_string(kMaxIterations) +
                        " dtsim simulates",
                    "use a smaller parallelism.averaging_period; throughput for large H tends to "
                    "that of no averaging at all");
  return static_cast<int>(total);
}

plan::DataParallelOptions DataParallelOptionsFor(const config::Scenario& s,
                                                 const models::ModelGraph& graph, int iterations,
                                                 int averaging_period, int materialize) {
  plan::DataParallelOptions o;
  o.batch_per_rank = s.workload.batch_per_device;
  o.iterations = iterations;
  o.bucket_bytes = s.parallelism.bucket_bytes;
  o.overlap = s.parallelism.overlap;
  o.algorithm = s.parallelism.algorithm;
  o.averaging_period = averaging_period;
  if (s.parallelism.strategy == Strategy::kLocalSgd) {
    for (const config::AveragingLevel& l : s.parallelism.averaging_groups)
      o.averaging_levels.push_back({l.group_size, l.period});
    o.average_parameters = true;
    o.post_local_steps = s.parallelism.post_local_steps;
    if (s.parallelism.outer_optimizer.enabled) {
      o.outer.nesterov = true;
      o.outer.lr = static_cast<float>(s.parallelism.outer_optimizer.lr);
      o.outer.momentum = static_cast<float>(s.parallelism.outer_optimizer.momentum);
    }
    const AveragingCost cost = AveragingCostOf(s, graph);
    o.averaging_bytes_scale = cost.bytes_scale;
    o.averaging_update_bytes_per_param = cost.convert_bytes_per_param;
    o.global_update_bytes_per_param = cost.outer_bytes_per_param;
    o.streaming_fragments = s.parallelism.streaming_fragments;
    o.streaming_overlap = s.parallelism.streaming_overlap;
  }
  o.materialized_ranks = materialize;
  o.via_host = s.parallelism.aggregate_on_host;
  o.recompute = WholeModelRecompute(s, graph);
  o.fsdp = s.parallelism.strategy == Strategy::kData && s.parallelism.zero_stage == 3;
  // Horovod fuses gradients into its own buffer size.
  if (s.workload.framework.fusion_buffer_bytes > 0) o.bucket_bytes = s.workload.framework.fusion_buffer_bytes;
  return o;
}

// Time-dependent behaviour: stragglers slow compute, parameter-server
// transfers reserve their links, link events slow what crosses their links.
class SimHooks : public EngineHooks {
 public:
  SimHooks(const StragglerModel* stragglers, Network* reservations, int ranks,
           const plan::Plan& plan, LinkEventTimeline* link_events)
      : stragglers_(stragglers), reservations_(reservations), plan_(plan),
        link_events_(link_events != nullptr && !link_events->empty() ? link_events : nullptr),
        delayed_until_(static_cast<std::size_t>(ranks), -1) {}

  SimTime ComputeEnd(const plan::Task& t, SimTime start, SimTime ns) override {
    if (stragglers_ == nullptr || t.rank >= stragglers_->num_ranks() ||
        t.kind == plan::TaskKind::kCollective)
      return AddSimTime(start, ns);
    // The per-step delay (exponential noise, stalls) comes once per worker
    // iteration, before its first compute task.
    auto& seen = delayed_until_[static_cast<std::size_t>(t.rank)];
    if (t.iteration > seen) {
      seen = t.iteration;
      start = AddSimTime(start, stragglers_->ExtraDelayNs(t.rank, t.iteration));
    }
    return stragglers_->TaskEnd(t.rank, t.iteration, start, ns);
  }

  SimTime CollectiveEnd(std::int32_t collective, SimTime start, SimTime ns) override {
    if (link_events_ == nullptr) return AddSimTime(start, ns);
    const plan::Collective& c = plan_.collectives()[static_cast<std::size_t>(collective)];
    const LinkEventTimeline::WorkKey key{static_cast<int>(c.op) * 2 + (c.via_host ? 1 : 0),
                                         static_cast<int>(c.algorithm), c.group,
                                         std::bit_cast<std::uint64_t>(c.bytes)};
    return link_events_->End(key, start, ns, [this, &c](Network& n) {
      return PricedCollectiveSeconds(plan_, c, n);
    });
  }

  SimTime TransferEnd(const plan::Task& t, SimTime start, SimTime ns) override {
    const SimTime end = reservations_ == nullptr
                            ? AddSimTime(start, ns)
                            : reservations_->ReserveTransfer(t.rank, t.peer, t.bytes, start);
    return Stretched(t, start, end);
  }

  void TransferGroupEnds(std::span<const plan::Task* const> tasks, SimTime start,
                         std::span<const SimTime> ns, std::span<SimTime> ends) override {
    if (reservations_ == nullptr || tasks.size() == 1) {
      EngineHooks::TransferGroupEnds(tasks, start, ns, ends);
      return;
    }
    dst_.clear();
    bytes_.clear();
    for (const plan::Task* t : tasks) {
      dst_.push_back(t->peer);
      bytes_.push_back(t->bytes);
    }
    reservations_->ReserveTransferGroup(tasks.front()->rank, dst_, bytes_, start, ends);
    for (std::size_t i = 0; i < tasks.size(); ++i) ends[i] = Stretched(*tasks[i], start, ends[i]);
  }

 private:
  // A transfer that would end at `end` on the nominal network, under the
  // link events (its whole time, queueing behind a reservation included,
  // stretched as its own transfer would be).
  SimTime Stretched(const plan::Task& t, SimTime start, SimTime end) {
    if (link_events_ == nullptr) return end;
    const LinkEventTimeline::WorkKey key{-1 - t.rank, t.peer, 0,
                                         std::bit_cast<std::uint64_t>(t.bytes)};
    return link_events_->End(key, start, end - start, [&t](Network& n) {
      return n.TransferSeconds(t.rank, t.peer, t.bytes);
    });
  }

  const StragglerModel* stragglers_;
  Network* reservations_;
  const plan::Plan& plan_;
  LinkEventTimeline* link_events_;
  std::vector<int> delayed_until_;  // last iteration whose delay was applied, per worker
  std::vector<int> dst_;            // TransferGroupEnds' scratch
  std::vector<double> bytes_;
};

struct Run {
  EngineResult engine;
  TaskCosts costs;
};

Run Execute(const plan::Plan& plan, const models::ModelGraph& graph,
            const std::vector<CostModel>& cost_models, const std::vector<int>& cost_of_rank,
            const NetworkSpec& spec, const StragglerModel* stragglers, bool reserve_links,
            const config::WorkloadConfig& workload, const std::string& engine = "analytic",
            const config::SimgridConfig& simgrid = {},
            const std::vector<config::LinkEvent>& link_events = {},
            const config::ClusterConfig& cluster = {}) {
  Network network(spec);
  Run run;
  run.costs = PriceTasks(plan, graph, cost_models, cost_of_rank, network, workload.framework.fused);
  AddHostCosts(plan, graph, workload.framework, workload.input, workload.precision, &run.costs);
  ShareHostCpuWithInput(plan, network, &run.costs);
  if (engine == "simgrid") {
    if (spec.nccl_protocols)
      throw UserError("cluster.network.protocols: nccl is priced by the analytic engine only",
                      "use engine: analytic, or protocols: ideal");
    if (!run.costs.host_ns.empty() || !run.costs.input_ns.empty())
      throw UserError("workload.framework with host costs and workload.input are simulated by "
                      "the analytic engine only",
                      "use engine: analytic, or workload.framework: none and synthetic input");  // flows share links on SimGrid: no reservations needed
    SimgridOptions options;
    options.config = simgrid.config;
    options.max_step_repeats = simgrid.max_step_repeats;
    options.log_threshold = simgrid.log_threshold;
    options.stragglers = stragglers;  // host speeds, speed profiles and the same draws
    options.link_events = SimgridLinkEvents(link_events, cluster);
    run.engine = RunSimgridEngine(plan, run.costs, spec, options);
    return run;
  }
  std::optional<LinkEventTimeline> timeline;
  if (!link_events.empty()) timeline.emplace(network, link_events, cluster);
  SimHooks hooks(stragglers, reserve_links ? &network : nullptr, plan.num_ranks(), plan,
                 timeline ? &*timeline : nullptr);
  run.engine = RunEngine(plan, run.costs, &hooks);
  return run;
}

// Bytes all ranks put on links in iterations [first, last].
double NetworkBytes(const plan::Plan& plan, Network& network, int first, int last) {
  double bytes = 0;
  // (op and host, algorithm, group, bytes) -> total
  std::map<std::tuple<int, int, std::int32_t, double>, double> cache;
  for (const plan::Collective& c : plan.collectives()) {
    if (c.iteration < first || c.iteration > last) continue;
    auto key = std::make_tuple(static_cast<int>(c.op) * 2 + (c.via_host ? 1 : 0),
                               static_cast<int>(c.algorithm), c.group, c.bytes);
    auto it = cache.find(key);
    if (it == cache.end()) {
      const auto& members = plan.groups()[static_cast<std::size_t>(c.group)];
      std::vector<int> ranks(members.begin(), members.end());
      // Summed on the hosts: only the hosts' all-reduce crosses links (the
      // copies to and from host memory do not).
      if (c.via_host) ranks = HostLeaders(network, ranks);
      it = cache.emplace(key, CollectiveTotalBytes(network, c.op, c.algorithm, ranks, c.bytes))
               .first;
    }
    bytes += it->second * c.copies;
  }
  for (const plan::Task& t : plan.tasks())
    if (t.kind == plan::TaskKind::kSend && t.iteration >= first && t.iteration <= last)
      bytes += t.bytes * t.copies;
  return bytes;
}

// Adds the parameter-server endpoints of `plan` to `spec`.
void AddServerEndpoints(const plan::Plan& plan, NetworkSpec* spec) {
  for (plan::RankId r = 0; r < plan.num_ranks(); ++r)
    if (plan.IsServer(r)) spec->extra_endpoint_nodes.push_back(plan.ranks[static_cast<std::size_t>(r)].node);
}

Breakdown Weighted(const Breakdown& a, double wa, const Breakdown& b, double wb) {
  Breakdown x;
  x.compute_s = wa * a.compute_s + wb * b.compute_s;
  x.exposed_comm_s = wa * a.exposed_comm_s + wb * b.exposed_comm_s;
  x.idle_s = wa * a.idle_s + wb * b.idle_s;
  x.comm_s = wa * a.comm_s + wb * b.comm_s;
  x.all_to_all_s = wa * a.all_to_all_s + wb * b.all_to_all_s;
  x.host_wait_s = wa * a.host_wait_s + wb * b.host_wait_s;
  x.input_wait_s = wa * a.input_wait_s + wb * b.input_wait_s;
  return x;
}

// A model with fused attention (transformer attention: flash) runs the
// FlashAttention kernels, which take fp16 or bf16 inputs only and run from
// Turing on (FlashAttention 1.x; sim/cost/flash_attention_table.h): refused on
// older GPUs and in fp32/tf32, where no such kernel exists.
void CheckFusedAttention(const config::Scenario& s, const models::ModelGraph& graph,
                         const hw::DeviceSpec& device) {
  bool fused = false;
  for (models::OpId v = 0; v < graph.num_ops() && !fused; ++v)
    fused = graph.op(v).kind == models::OpKind::kAttention;
  if (!fused) return;
  if (s.workload.precision == hw::Precision::kFp32 || s.workload.precision == hw::Precision::kTf32)
    throw UserError(s.Where("workload.precision"),
                    "model '" + graph.name() + "' has fused (flash) attention, and FlashAttention "
                    "runs in fp16 or bf16 only, not " +
                        hw::PrecisionName(s.workload.precision),
                    "use precision: bf16 or fp16, or attention: eager");
  if (device.arch != hw::GpuArch::kUnknown && FlashReleaseFor(device.arch) == FlashRelease::kNone)
    throw UserError(s.Where("cluster.device"),
                    "model '" + graph.name() + "' has fused (flash) attention, and FlashAttention "
                    "needs a Turing GPU or later (flash-attn README); device '" + device.name +
                        "' is " + hw::GpuArchName(device.arch),
                    "use attention: eager on this GPU");
  if (device.arch == hw::GpuArch::kUnknown) return;
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    const models::Op& op = graph.op(v);
    if (op.kind != models::OpKind::kAttention) continue;
    const models::AttentionKernel kernel = op.attrs.attention_kernel != models::AttentionKernel::kDefault
                                               ? op.attrs.attention_kernel
                                               : s.workload.framework.attention;
    const std::string problem = AttentionKernelProblem(device.arch, kernel);
    if (!problem.empty())
      throw UserError(s.Where("workload.model"),
                      "attention kernel '" + std::string(models::AttentionKernelName(kernel)) +
                          "' on " + device.name + ": " + problem,
                      "name another kernel (attention: flash, fa2, fa3, cudnn or sdpa) or another "
                      "framework");
    return;  // every attention op of a model names the same kernel
  }
}

}  // namespace

bool WorkersAreAlike(const config::Scenario& s) {
  return !UsesServers(s) && !IsPipelined(s) && s.stragglers.Empty() && s.link_events.empty() &&
         !IsMixed(s);
}

bool HybridRanksMirror(const config::Scenario& s) {
  return s.stragglers.Empty() && s.link_events.empty() && s.engine != "simgrid";
}

NetworkSpec MakeNetworkSpec(const config::Scenario& s, const hw::HardwareCatalog& catalog) {
  const auto& c = s.cluster;
  const hw::LinkSpec* intra = catalog.FindLink(c.intra_node_link);
  const hw::LinkSpec* nic = catalog.FindLink(c.network.link);
  if (intra == nullptr) throw UserError("unknown intra-node link '" + c.intra_node_link + "'");
  if (nic == nullptr) throw UserError("unknown network link '" + c.network.link + "'");
  NetworkSpec n;
  n.nodes = c.nodes;
  n.devices_per_node = c.devices_per_node;
  // Transports fold into the links (config/transport.h): a device port is
  // one process's, a node's NICs carry the messages of all its devices,
  // each copied by its own process.
  const config::EffectiveLink in_node = config::ApplyTransport(
      intra->bw_bytes_per_s, intra->latency_s, c.network.intra_node_transport);
  const config::EffectiveLink between = config::ApplyTransport(
      nic->bw_bytes_per_s * c.network.nics_per_node, nic->latency_s, c.network.transport,
      c.devices_per_node);
  n.intra_bw_bytes_per_s = in_node.bw_bytes_per_s;
  n.intra_latency_s = in_node.latency_s;
  if (const hw::LinkSpec* host = catalog.FindLink(c.host_link)) {
    n.host_link_bw_bytes_per_s = host->bw_bytes_per_s;
    n.host_link_latency_s = host->latency_s;
  }
  // The host CPU sums at the catalog host's memory bandwidth x the
  // roofline's default memory efficiency (sim/cost/cost_model.h, 0.7).
  if (const hw::DeviceSpec* cpu = catalog.FindDevice("cpu-host"))
    n.host_memory_bytes_per_s = cpu->memory_bw_bytes_per_s * CostModelOptions{}.memory_efficiency;
  n.nic_bw_bytes_per_s = between.bw_bytes_per_s;
  n.net_latency_s = between.latency_s;
  n.fat_tree = c.network.topology == config::Topology::kFatTree;
  n.nodes_per_leaf = c.network.nodes_per_leaf;
  n.oversubscription = c.network.oversubscription;
  n.spine_latency_s = c.network.spine_latency_s;
  n.collective_latency_s = c.network.collective_latency_s;
  if (c.network.protocols == "nccl") {
    n.nccl_protocols = true;
    // NCCL enables LL128 by default only on Volta, Ampere and Hopper GPUs
    // joined by NVLink (tuning.cc: "Enable LL128 by default only on
    // Volta/Ampere/Hopper+NVLink").
    const hw::DeviceSpec* device = catalog.FindDevice(c.device);
    const hw::GpuArch arch = device ? device->arch : hw::GpuArch::kUnknown;
    const bool nvlink =
        c.intra_node_link.starts_with("nvlink") || c.intra_node_link.starts_with("nvswitch");
    n.nccl_ll128 = nvlink && (arch == hw::GpuArch::kVolta || arch == hw::GpuArch::kAmpere ||
                              arch == hw::GpuArch::kHopper);
  }
  if (IsMixed(s)) SetNodeGroupLinks(s, catalog, &n);
  return n;
}

plan::Plan MakePlan(const config::Scenario& s, const models::ModelGraph& graph, int materialize,
                    const std::vector<int>* batch_of_rank) {
  CheckPlanSize(s, graph);  // refuses plans that would not fit in memory
  const plan::ClusterShape shape{s.cluster.nodes, s.cluster.devices_per_node};
  if (IsPipelined(s)) {
    const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
    const hw::DeviceSpec* device = catalog.FindDevice(s.cluster.device);
    if (device == nullptr) throw UserError("unknown device '" + s.cluster.device + "'");
    CostModelOptions options = MakeCostOptions(s);
    options.measured = WorkloadMeasuredCosts(s.workload, graph);
    const CostModel cost_model(*device, s.workload.precision, std::move(options));
    HybridSetup setup = MakeHybridSetup(s, graph, cost_model);
    setup.options.symmetric = materialize != 0;
    return plan::BuildHybridPlan(setup.shard, shape, setup.options);
  }
  if (UsesServers(s)) {
    const auto& ps = s.parallelism.parameter_server;
    plan::ParameterServerOptions o;
    o.batch_per_rank = s.workload.batch_per_device;
    o.iterations = IterationsToSimulate(s);
    o.servers = ps.servers;
    o.dedicated = ps.placement == config::ServerPlacement::kDedicated;
    o.asynchronous = s.parallelism.sync == config::SyncMode::kAsynchronous;
    o.replicas_to_aggregate = ps.replicas_to_aggregate;
    o.push_parameters = ps.payload == config::PsPayload::kParameters ||
                        s.parallelism.strategy == Strategy::kLocalSgd;
    o.averaging_period = config::AveragingPeriod(s);
    o.recompute = WholeModelRecompute(s, graph);
    o.aggregate_in_node = ps.aggregate_in_machine;
    o.aggregate_on_host = ps.aggregate_on_host;
    o.overlap = s.parallelism.overlap;
    o.placement = ps.variable_placement.value_or(s.workload.framework.ps_placement);
    if (o.replicas_to_aggregate > s.cluster.num_devices())
      throw UserError("parallelism.parameter_server.replicas_to_aggregate (" +
                          std::to_string(o.replicas_to_aggregate) + ") exceeds the " +
                          std::to_string(s.cluster.num_devices()) + " workers",
                      "k of n: at most the number of workers; 0 means all");
    return plan::BuildParameterServerPlan(graph, shape, o);
  }
  plan::DataParallelOptions o =
      DataParallelOptionsFor(s, graph, IterationsToSimulate(s), config::AveragingPeriod(s), materialize);
  if (batch_of_rank != nullptr) {
    o.batch_of_rank = *batch_of_rank;
  } else if (IsMixed(s) && s.parallelism.balance_batch == config::BatchBalance::kBySpeed) {
    o.batch_of_rank = RankBatches(s, GroupSingleDeviceSteps(s, graph));
  }
  return plan::BuildDataParallelPlan(graph, shape, o);
}

namespace {

// Memory per device: each pipeline stage (or the one data-parallel worker),
// its capacity and the first stage that does not fit (Prediction fields).
// `hybrid`: the pipelined plan's options (unused otherwise).
void SetStageMemory(const config::Scenario& s, const models::ModelGraph& full,
                    double capacity_bytes, bool pipelined, bool servers, int workers,
                    const plan::HybridOptions& hybrid, Prediction* out) {
  Prediction& p = *out;
  const auto& par = s.parallelism;
  MemoryInputs in;
  in.graph = &full;
  in.optimizer = par.optimizer;
  in.mixed_precision = hw::IsMixedPrecision(s.workload.precision);
  in.fp32_grads = s.workload.framework.fp32_grads;
  in.fp8 = s.workload.precision == hw::Precision::kFp8;
  in.recompute = par.recompute;
  in.recompute_selective = par.recompute_selective;
  p.memory.capacity_bytes = capacity_bytes;
  // A GPU holds its runtime besides the tensors (GpuRuntimeBytes): one NCCL
  // communicator per parallel dimension of more than one rank.
  const bool gpu = p.device.HasMicroarchitecture();  // the prediction's device, set by Simulate
  p.memory.recompute = par.recompute;
  p.memory.recompute_selective = par.recompute_selective;
  if (pipelined) {
    const plan::HybridOptions& o = hybrid;
    p.layout.pipeline_stages = o.pipeline;
    p.layout.tensor_parallel = o.tensor;
    p.layout.context_parallel = o.context.degree;
    in.tensor_parallel = o.tensor;
    in.sequence_parallel = o.sequence_parallel;
    in.context = o.context;
    // Ranks of a stage: its context ranks' tensor groups (plan/hybrid.h).
    const int stage_ranks = o.tensor * o.context.degree;
    if (o.schedule == plan::PipelineSchedule::kPipeDream2BW) in.weight_versions = 2;
    const bool pipedream = o.schedule == plan::PipelineSchedule::kPipeDream;
    if (pipedream) p.layout.stage_replicas = o.stage_replicas;
    in.data_parallel = workers / (o.tensor * o.pipeline);
    in.expert_parallel = o.expert;
    if (gpu)
      in.workspace_bytes = GpuRuntimeBytes((o.tensor > 1) + (o.pipeline > 1) + (o.context.degree > 1) +
                                           (o.expert > 1) + (in.data_parallel > o.context.degree));
    in.zero_stage = par.zero_stage;
    in.micro_batch_size = o.micro_batch;
    // GPipe re-materializes whole partitions (MemoryInputs::recompute_per_stage).
    in.recompute_per_stage = par.recompute && o.schedule == plan::PipelineSchedule::kGpipe;
    p.memory.recompute_per_stage = in.recompute_per_stage;
    // Copies of shared weights (tied embeddings): the stages of each
    // shared-weight all-reduce that do not hold the op itself.
    std::vector<std::vector<models::OpId>> copies(static_cast<std::size_t>(o.pipeline));
    for (const plan::Collective& c : p.plan.collectives()) {
      if (c.shared_op < 0 || c.iteration != 0) continue;
      for (plan::RankId r : p.plan.groups()[static_cast<std::size_t>(c.group)]) {
        auto& list = copies[static_cast<std::size_t>(
            plan::HybridStageOfRank(o, workers, r))];
        const auto op = static_cast<models::OpId>(c.shared_op);
        if (std::find(list.begin(), list.end(), op) == list.end()) list.push_back(op);
      }
    }
    for (int st = 0; st < o.pipeline; ++st) {
      in.ops.clear();
      for (int j = 0; j < o.virtual_stages; ++j) {
        const auto& [b, e] = o.chunks[static_cast<std::size_t>(st + j * o.pipeline)];
        for (models::OpId v = b; v < e; ++v) in.ops.push_back(v);
      }
      in.weight_copies.clear();
      for (models::OpId op : copies[static_cast<std::size_t>(st)])
        if (std::find(in.ops.begin(), in.ops.end(), op) == in.ops.end())
          in.weight_copies.push_back(op);
      in.micro_batches_in_flight =
          MicroBatchesInFlight(o.schedule, st, o.pipeline, o.micro_batches, o.virtual_stages);
      plan::RankId rank = st * stage_ranks;
      if (pipedream) {
        // Weight stashing: a version per minibatch in flight (plan/pipedream.h).
        in.micro_batches_in_flight = plan::PipeDreamInFlight(o.stage_replicas, st);
        in.weight_versions = in.micro_batches_in_flight;
        in.data_parallel = o.stage_replicas[static_cast<std::size_t>(st)];
        rank = 0;
        for (int k = 0; k < st; ++k) rank += o.stage_replicas[static_cast<std::size_t>(k)];
      }
      p.memory.stages.push_back(DeviceMemory(in));
      p.memory.stage_rank.push_back(rank);
    }
  } else {
    in.ops = AllOps(full);
    if (s.parallelism.strategy == Strategy::kLocalSgd && s.parallelism.outer_optimizer.enabled)
      in.extra_state_bytes_per_param = 8;  // previous parameters and momentum, fp32
    in.data_parallel = servers ? 1 : workers;
    if (gpu) in.workspace_bytes = GpuRuntimeBytes(workers > 1 ? 1 : 0);
    // FSDP (zero_stage 3): the bucket being computed and the one gathered
    // ahead of it are held whole (plan/data_parallel.h, fsdp).
    if (!servers && par.zero_stage == 3 && workers > 1) in.workspace_bytes += 2 * par.bucket_bytes;
    in.zero_stage = servers ? 0 : par.zero_stage;
    in.micro_batch_size = s.workload.batch_per_device;
    in.micro_batches_in_flight = 1;
    p.memory.stages.push_back(DeviceMemory(in));
    p.memory.stage_rank.push_back(0);
  }
  // The verdict, a band (sim/memory.h): refused beyond the margin above
  // the capacity (or beyond the capacity when the scenario refuses tight
  // plans), a warning within it.
  for (std::size_t st = 0; st < p.memory.stages.size() && p.does_not_fit.empty(); ++st) {
    const double peak = p.memory.stages[st].Total();
    const MemoryVerdict v = JudgeMemory(peak, p.memory.capacity_bytes, kMemoryModelMargin);
    if (v == MemoryVerdict::kDoesNotFit ||
        (s.refuse_tight_memory && peak > p.memory.capacity_bytes)) {
      p.does_not_fit = DoesNotFit(p.memory.stage_rank[st], p.memory.stages[st], p.memory.capacity_bytes);
    } else if (v == MemoryVerdict::kTight && p.memory_warning.empty()) {
      p.memory_warning = TightMemoryWarning(p.memory.stage_rank[st], peak, p.memory.capacity_bytes,
                                            kMemoryModelMargin);
    }
  }
}

// The pipelines' fast path (SimulateOptions::fast): a replica running M
// identical micro-batches repeats the same pattern once its pipeline is
// full, so a step's time, breakdown and traffic grow linearly with M:
// GPipe's by one micro-batch's work on the slowest stage per micro-batch,
// 1F1B's and the interleaved schedule's once M >= p (every p micro-batches
// for the interleaved one). The plan is simulated with M1 = 2p and M2 = 3p
// micro-batches and the figures of M extrapolated from the two; memory is
// computed for M, and a plan that does not fit stops after the first
// simulation (its timing figures are then those of 2p micro-batches, and
// not reported: sim/report.h). Nothing (std::nullopt) when M < 4p, where
// the full simulation costs little, or when the plan is not of that kind.
std::optional<Prediction> PipelineFastPath(const config::Scenario& s,
                                           const SimulateOptions& options) {
  const auto& h = s.parallelism.hybrid;
  if (!IsPipelined(s) || s.parallelism.strategy != Strategy::kHybrid || s.engine != "analytic" ||
      !s.stragglers.Empty() || !s.link_events.empty() || s.failures.Enabled() ||
      s.workload.framework.HasHostCosts() || s.workload.framework.sync_each_step ||
      s.workload.input.Costs() ||
      (h.schedule != config::PipelineSchedule::kGpipe && h.schedule != config::PipelineSchedule::kOneFOneB &&
       h.schedule != config::PipelineSchedule::kInterleaved))
    return std::nullopt;
  const int n = s.cluster.num_devices();
  const int tp = h.tensor_parallel * h.pipeline_parallel * h.context_parallel;
  if (tp < 1 || n % tp != 0 || h.micro_batch_size < 1) return std::nullopt;
  const std::int64_t per_step = std::int64_t{n / tp} * h.micro_batch_size;
  const std::int64_t global = h.global_batch > 0 ? h.global_batch : per_step * h.pipeline_parallel;
  if (global % per_step != 0) return std::nullopt;  // the full simulation says why
  const std::int64_t m = global / per_step;
  const int p = h.pipeline_parallel;
  const std::int64_t m1 = 2 * p, m2 = 3 * p;
  if (m < 4 * p) return std::nullopt;
  std::optional<models::ModelGraph> built;
  if (options.graph == nullptr) built = config::BuildWorkloadModel(s);
  SimulateOptions sub;
  sub.graph = options.graph != nullptr ? options.graph : &*built;
  // The same partition as M's: with GPipe, memory may bind for M micro-batches
  // in flight and not for 2p.
  sub.partition_micro_batches = static_cast<int>(m);
  sub.materialize_all = options.materialize_all;
  auto with = [&](std::int64_t micro_batches) {
    config::Scenario x = s;
    x.parallelism.hybrid.global_batch = static_cast<int>(per_step * micro_batches);
    return Simulate(x, sub);
  };
  Prediction a = with(m1);
  // Memory for M; a plan that does not fit needs no second simulation (its
  // timing is not reported).
  plan::HybridOptions options_m = a.layout.hybrid;
  options_m.micro_batches = static_cast<int>(m);
  a.memory.stages.clear();
  a.memory.stage_rank.clear();
  a.does_not_fit.clear();
  SetStageMemory(s, *sub.graph, a.memory.capacity_bytes, true, false, n, options_m, &a);
  a.layout.hybrid = options_m;
  // The plan simulated holds M1 micro-batches; the step reported is M's.
  a.plan.samples_per_iteration = global;
  a.layout.extrapolated_from = {static_cast<int>(m1), static_cast<int>(m2)};
  if (!a.does_not_fit.empty()) return a;
  const Prediction b = with(m2);
  const double f = static_cast<double>(m - m1) / static_cast<double>(m2 - m1);
  auto lin = [f](double x1, double x2) { return x1 + f * (x2 - x1); };
  auto lin_breakdown = [&](Breakdown& x, const Breakdown& y) {
    x.compute_s = lin(x.compute_s, y.compute_s);
    x.exposed_comm_s = lin(x.exposed_comm_s, y.exposed_comm_s);
    x.idle_s = lin(x.idle_s, y.idle_s);
    x.comm_s = lin(x.comm_s, y.comm_s);
    x.all_to_all_s = lin(x.all_to_all_s, y.all_to_all_s);
    x.host_wait_s = lin(x.host_wait_s, y.host_wait_s);
    x.input_wait_s = lin(x.input_wait_s, y.input_wait_s);
  };
  RunMetrics& r = a.metrics;
  const RunMetrics& rb = b.metrics;
  r.step_time_s = lin(r.step_time_s, rb.step_time_s);
  r.throughput_samples_per_s = static_cast<double>(global) / r.step_time_s;
  lin_breakdown(r.breakdown, rb.breakdown);
  for (std::size_t i = 0; i < r.per_rank.size() && i < rb.per_rank.size(); ++i) {
    lin_breakdown(r.per_rank[i], rb.per_rank[i]);
    r.compute_utilization[i] = r.per_rank[i].compute_s / r.step_time_s;
  }
  for (std::size_t i = 0; i < r.iteration_end_s.size() && i < rb.iteration_end_s.size(); ++i)
    r.iteration_end_s[i] = lin(r.iteration_end_s[i], rb.iteration_end_s[i]);
  const std::vector<double> steps(static_cast<std::size_t>(std::max(1, r.measured_iterations)),
                                  r.step_time_s);
  r.step_times = Summarize(steps);
  a.comm.network_bytes_per_sample =
      lin(a.comm.network_bytes_per_sample * static_cast<double>(per_step * m1),
          b.comm.network_bytes_per_sample * static_cast<double>(per_step * m2)) /
      static_cast<double>(global);
  a.comm.averaging_round_s = r.step_time_s * a.comm.averaging_period;
  a.comm.context.comm_s = lin(a.comm.context.comm_s, b.comm.context.comm_s);
  a.comm.context.exposed_s = lin(a.comm.context.exposed_s, b.comm.context.exposed_s);
  a.comm.context.bytes = lin(a.comm.context.bytes, b.comm.context.bytes);
  // The single-device reference runs the replica's micro-batches too.
  if (a.scaling.single_device_throughput_samples_per_s > 0 && b.scaling.single_device_throughput_samples_per_s > 0) {
    const double one = lin(static_cast<double>(h.micro_batch_size * m1) /
                               a.scaling.single_device_throughput_samples_per_s,
                           static_cast<double>(h.micro_batch_size * m2) /
                               b.scaling.single_device_throughput_samples_per_s);
    a.scaling.single_device_throughput_samples_per_s = static_cast<double>(h.micro_batch_size * m) / one;
    a.scaling.efficiency =
        r.throughput_samples_per_s / (n * a.scaling.single_device_throughput_samples_per_s);
    a.scaling.reference = "one device, whole model, " + std::to_string(m) +
                          " micro-batch(es) of " + std::to_string(h.micro_batch_size) +
                          " per step";
  }
  a.wall_seconds += b.wall_seconds;
  return a;
}

}  // namespace

Prediction Simulate(const config::Scenario& s, const SimulateOptions& options) {
  if (!s.jobs.empty()) return SimulateJobs(s);
  if (options.fast) {
    if (std::optional<Prediction> x = PipelineFastPath(s, options)) return std::move(*x);
  }
  const auto wall_start = std::chrono::steady_clock::now();
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
  const hw::DeviceSpec* device = catalog.FindDevice(s.cluster.device);
  if (device == nullptr) throw UserError("unknown device '" + s.cluster.device + "'");
  const bool servers = UsesServers(s);
  const hw::DeviceSpec* server_device = device;
  if (servers) {
    server_device = catalog.FindDevice(s.parallelism.parameter_server.device);
    if (server_device == nullptr)
      throw UserError("unknown parameter-server device '" + s.parallelism.parameter_server.device +
                          "'",
                      "use a catalog device (dtsim devices), e.g. cpu-host or a GPU name");
  }
  if (s.parallelism.algorithm == config::CollectiveAlgorithm::kHierarchical && servers)
    throw UserError("a hierarchical all-reduce needs strategy data or local_sgd");
  if (IsMixed(s)) CheckNodeGroups(s);

  Prediction p;
  std::optional<models::ModelGraph> built;
  if (options.graph == nullptr) built = config::BuildWorkloadModel(s);
  const models::ModelGraph& full = options.graph ? *options.graph : *built;
  CheckPlanSize(s, full);  // refuses plans that would not fit in memory
  if (s.parallelism.strategy == Strategy::kLocalSgd && s.parallelism.streaming_fragments > 1) {
    const std::size_t buckets = plan::GradientBuckets(full, s.parallelism.bucket_bytes).size();
    if (buckets < static_cast<std::size_t>(s.parallelism.streaming_fragments))
      throw UserError(s.Where("parallelism.streaming"),
                      "streaming fragments are groups of gradient buckets, and the model has " +
                          std::to_string(buckets) + " bucket(s) of parallelism.bucket_size for " +
                          std::to_string(s.parallelism.streaming_fragments) + " fragments",
                      "lower parallelism.bucket_size or the number of fragments");
  }
  if (s.parallelism.recompute_selective && plan::AttentionCores(full).empty())
    throw UserError(s.Where("parallelism.recompute"),
                    "recompute: selective recomputes attention's core (Q K^T, softmax, dropout, "
                    "attention over V), and model '" + full.name() + "' has none",
                    "use recompute: full, or none");
  p.model_totals = full.Totals();
  for (models::OpId c : full.consumers(0))
    if (full.op(c).kind == models::OpKind::kEmbedding)
      p.tokens_per_sample = static_cast<double>(models::NumElements(full.op(0).output_shape));
  p.device = *device;
  p.comm.averaging_period = config::AveragingPeriod(s);
  CostModelOptions cost_options = MakeCostOptions(s);
  cost_options.measured = WorkloadMeasuredCosts(s.workload, full);
  for (const hw::DeviceSpec* worker : WorkerDevices(s, catalog)) {
    if (s.workload.cost_model == config::CostModelKind::kKernels && !worker->HasMicroarchitecture())
      throw UserError(s.workload.cost_model_where,
                      "cost_model: kernels needs a GPU whose architecture and SM count the catalog "
                      "knows; device '" + worker->name + "' has none",
                      "use cost_model: roofline, or a built-in GPU (dtsim devices)");
    CheckFusedAttention(s, full, *worker);
  }
  // One cost model per kind of worker device (node groups), then the servers'.
  const std::vector<CostModel> cost_models =
      IsMixed(s) ? NodeGroupCostModels(s, catalog, cost_options, *server_device)
                 : std::vector<CostModel>{CostModel(*device, s.workload.precision, cost_options),
                                          CostModel(*server_device, s.workload.precision, cost_options)};
  // Mixed clusters: each group's device alone, and the batches balanced on it.
  const std::vector<double> group_steps = IsMixed(s) ? GroupSingleDeviceSteps(s, full) : std::vector<double>{};
  const std::vector<int> batches = IsMixed(s) ? RankBatches(s, group_steps) : std::vector<int>{};
  DescribePricing(cost_models[0], &p.setup);
  const int workers = s.cluster.num_devices();
  const bool alike = WorkersAreAlike(s);
  // SimGrid simulates every rank: the flows of all of them share the links.
  const bool simgrid = s.engine == "simgrid";
  // The fast path measures its first iteration; the host and the input
  // pipeline need a warm-up iteration before it.
  const bool host_side = s.workload.framework.HasHostCosts() ||
                         s.workload.framework.sync_each_step || s.workload.input.Costs();
  // Hierarchical averaging has more than two kinds of iterations.
  const bool fast = options.fast && alike && !simgrid && !host_side &&
                    s.parallelism.averaging_groups.empty() &&
                    s.parallelism.streaming_fragments == 1;
  // Identical workers: a few stand for all (the timeline shows them).
  const int materialize = fast              ? 1
                          : alike && !simgrid ? std::min(workers, std::max(1, s.outputs.trace_max_ranks))
                                              : 0;

  const bool pipelined = IsPipelined(s);
  plan::HybridOptions hybrid;  // pipelined only
  if (pipelined) {
    HybridSetup setup = MakeHybridSetup(s, full, cost_models[0], options.partition_micro_batches);
    hybrid = setup.options;
    p.layout.partition_note = setup.partition_note;
    // Replicas and tensor ranks mirror their stage's representative unless
    // stragglers or link events make them differ, or SimGrid moves their
    // flows.
    setup.options.symmetric = HybridRanksMirror(s) && !options.materialize_all;
    p.plan = plan::BuildHybridPlan(setup.shard, {s.cluster.nodes, s.cluster.devices_per_node},
                                   setup.options);
    p.graph = std::move(setup.shard);
  } else if (fast) {
    // One iteration of each kind, composed below: iteration 0 without
    // averaging, iteration 1 with it (both average when H = 1).
    p.graph = full;
    p.plan = plan::BuildDataParallelPlan(
        p.graph, {s.cluster.nodes, s.cluster.devices_per_node},
        DataParallelOptionsFor(s, p.graph, 2, p.comm.averaging_period > 1 ? 2 : 1, 1));
  } else {
    p.graph = full;
    p.plan = MakePlan(s, p.graph, materialize, &batches);
  }
  p.layout.materialized_workers = 0;
  for (plan::RankId r = 0; r < p.plan.num_ranks(); ++r)
    p.layout.materialized_workers += p.plan.IsMaterialized(r) && !p.plan.IsServer(r);

  p.network = MakeNetworkSpec(s, catalog);
  AddServerEndpoints(p.plan, &p.network);
  std::vector<int> cost_of_rank(static_cast<std::size_t>(p.plan.num_ranks()), 0);
  if (IsMixed(s)) {
    const std::vector<int> group = GroupOfRank(s.cluster);
    std::copy(group.begin(), group.end(), cost_of_rank.begin());
  }
  for (plan::RankId r = 0; r < p.plan.num_ranks(); ++r)
    if (p.plan.IsServer(r))
      cost_of_rank[static_cast<std::size_t>(r)] = static_cast<int>(cost_models.size()) - 1;
  std::optional<StragglerModel> stragglers;
  if (!s.stragglers.Empty()) stragglers.emplace(s.stragglers, s.seed, workers);
  Run run = Execute(p.plan, p.graph, cost_models, cost_of_rank, p.network,
                    stragglers ? &*stragglers : nullptr, servers || pipelined, s.workload,
                    s.engine, s.simgrid, s.link_events, s.cluster);
  p.engine = std::move(run.engine);
  p.costs = std::move(run.costs);
  if (const config::NetworkConfig& n = s.cluster.network;
      !n.transport.IsNative() || !n.intra_node_transport.IsNative())
    p.setup.transport = "between nodes " + config::DescribeTransport(n.transport) + "; within nodes " +
                  config::DescribeTransport(n.intra_node_transport);
  if (host_side) {
    p.setup.framework = s.workload.framework.name;
    const config::InputPipeline& in = s.workload.input;
    p.setup.framework += in.Costs() ? ", input " + in.dataset + " on " + std::to_string(in.cores) +
                                    " core(s) per node"
                              : ", synthetic input";
  }

  Network network(p.network);
  if (fast) {
    // Compose H iterations: H - 1 without averaging and one with it.
    const int h = p.comm.averaging_period;
    const RunMetrics plain = ComputeMetrics(p.plan, p.engine, {0, 0});
    const RunMetrics avg = ComputeMetrics(p.plan, p.engine, {1, 1});
    p.metrics = avg;
    p.metrics.first_measured_iteration = 0;
    p.metrics.measured_iterations = 2;
    const double wp = (h - 1.0) / h, wa = 1.0 / h;
    p.metrics.step_time_s = wp * plain.step_time_s + wa * avg.step_time_s;
    p.metrics.throughput_samples_per_s =
        static_cast<double>(p.plan.samples_per_iteration) / p.metrics.step_time_s;
    p.metrics.breakdown = Weighted(plain.breakdown, wp, avg.breakdown, wa);
    // The steps the full simulation measures (all but the warm-up): whole
    // rounds of H - 1 plain steps and one that averages.
    const std::int64_t rounds = std::max<std::int64_t>(1, IterationsFor(s) - 1) / h;
    const std::array<double, 2> step{plain.step_time_s, avg.step_time_s};
    const std::array<std::int64_t, 2> count{rounds * (h - 1), rounds};
    p.metrics.step_times = SummarizeCounted(step, count);
    for (std::size_t r = 0; r < p.metrics.per_rank.size(); ++r) {
      p.metrics.per_rank[r] = Weighted(plain.per_rank[r], wp, avg.per_rank[r], wa);
      p.metrics.compute_utilization[r] = p.metrics.per_rank[r].compute_s / p.metrics.step_time_s;
    }
    p.comm.network_bytes_per_sample = NetworkBytes(p.plan, network, 1, 1) / h /
                                 static_cast<double>(p.plan.samples_per_iteration);
  } else {
    // PipeDream-2BW never flushes: filling the pipeline takes its first
    // ceil((p - 1) / m) iterations and draining it the last as many, so the
    // steady state lies between them (when there is one).
    MetricsWindow window;
    // PipeDream likewise: a replica of the input stage admits NOAM
    // minibatches, (devices - 1) minibatches fill the pipeline.
    const bool pipedream = pipelined && hybrid.schedule == plan::PipelineSchedule::kPipeDream;
    if (pipelined && (hybrid.schedule == plan::PipelineSchedule::kPipeDream2BW || pipedream)) {
      const int fill = pipedream ? workers - 1 : hybrid.pipeline - 1;
      const int edge = (fill + hybrid.micro_batches - 1) / hybrid.micro_batches;
      const int k = std::max(1, edge);
      if (p.plan.iterations > 2 * k) window = {k, p.plan.iterations - 1 - k};
    }
    p.metrics = ComputeMetrics(p.plan, p.engine, window);
    if (pipelined)
      p.comm.context = ComputeContextComm(p.plan, p.engine, p.metrics, hybrid.tensor,
                                          hybrid.context.degree);
    const int first = p.metrics.first_measured_iteration;
    const int last = first + p.metrics.measured_iterations - 1;
    // Collectives are counted over their whole group, so symmetric plans
    // need no scaling; parameter-server plans materialize every worker.
    p.comm.network_bytes_per_sample =
        NetworkBytes(p.plan, network, first, last) /
        (static_cast<double>(p.plan.samples_per_iteration) * p.metrics.measured_iterations);
    if (servers) p.comm.server_loads = ComputeServerLoads(p.plan, p.engine, first, last);
    if (servers && s.parallelism.sync == config::SyncMode::kAsynchronous) {
      p.async = ComputeAsyncFigures(p.plan, p.engine, std::max(1, first));
      // Asynchronous workers do not wait for each other: throughput is the
      // sum of their paces.
      p.metrics.throughput_samples_per_s = p.async->global_steps_per_s * s.workload.batch_per_device;
      if (p.async->global_steps_per_s > 0)
        p.metrics.step_time_s = workers / p.async->global_steps_per_s;
      if (const std::vector<double> steps = StepTimesPerWorker(p.plan, p.engine, std::max(1, first));
          !steps.empty())
        p.metrics.step_times = Summarize(steps);
    }
  }
  p.comm.averaging_round_s = p.metrics.step_time_s * p.comm.averaging_period;

  // Baseline: the same per-device work on a single device, alone (see
  // Prediction::single_device_throughput_samples_per_s).
  // A mixed cluster has one per group (SetNodeGroupFigures).
  if (!IsMixed(s)) {
    config::Scenario one = s;
    one.cluster.nodes = 1;
    one.cluster.devices_per_node = 1;
    one.stragglers = {};
    one.failures = {};
    one.workload.iterations = 1;
    if (pipelined) {
      // One replica's micro-batches on one device: t = p = d = 1.
      config::HybridConfig& h = one.parallelism.hybrid;
      h.tensor_parallel = 1;
      h.pipeline_parallel = 1;
      h.context_parallel = 1;
      h.expert_parallel = 1;
      h.virtual_stages = 1;
      h.schedule = config::PipelineSchedule::kOneFOneB;
      h.stage_layers.clear();
      h.stage_replicas.clear();
      h.plan_replicas = false;
      h.global_batch = hybrid.micro_batch * hybrid.micro_batches;
      h.micro_batch_size = hybrid.micro_batch;
      one.parallelism.zero_stage = 0;
      p.scaling.reference = "one device, whole model, " + std::to_string(hybrid.micro_batches) +
                            " micro-batch(es) of " + std::to_string(hybrid.micro_batch) +
                            " per step";
    } else {
      one.parallelism.strategy = Strategy::kData;
      p.scaling.reference = "one device, data parallel alone, batch " +
                            std::to_string(s.workload.batch_per_device) + " per step";
    }
    {
      NetworkSpec one_net = MakeNetworkSpec(one, catalog);
      const plan::Plan one_plan = MakePlan(one, full);
      const Run one_run = Execute(one_plan, full, cost_models, {0},
                                  one_net, nullptr, IsPipelined(one), one.workload);
      const RunMetrics one_metrics = ComputeMetrics(one_plan, one_run.engine);
      p.scaling.single_device_throughput_samples_per_s = one_metrics.throughput_samples_per_s;
    }
    if (p.scaling.single_device_throughput_samples_per_s > 0)
      p.scaling.efficiency = p.metrics.throughput_samples_per_s /
                             (workers * p.scaling.single_device_throughput_samples_per_s);
  }

  SetStageMemory(s, full, device->memory_bytes, pipelined, servers, workers, hybrid, &p);
  if (pipelined) p.layout.hybrid = hybrid;
  if (IsMixed(s)) SetNodeGroupFigures(s, catalog, full, batches, group_steps, &p);

  if (s.parallelism.strategy == Strategy::kLocalSgd && s.parallelism.post_local_steps > 0) {
    config::Scenario sync = s;
    sync.parallelism.strategy =
        UsesServers(s) ? Strategy::kParameterServer : Strategy::kData;  // synchronous either way
    sync.parallelism.averaging_groups.clear();
    sync.parallelism.post_local_steps = 0;
    SimulateOptions o = options;
    o.graph = &full;
    const Prediction phase = Simulate(sync, o);
    Prediction::PostLocal pl;
    pl.synchronous_steps = s.parallelism.post_local_steps;
    pl.synchronous_step_s = phase.metrics.step_time_s;
    pl.synchronous_throughput_samples_per_s = phase.metrics.throughput_samples_per_s;
    pl.synchronous_phase_s = pl.synchronous_steps * pl.synchronous_step_s;
    p.post_local = pl;
  }
  if (s.failures.Enabled())
    p.failures = SimulateFailures(s.failures, workers, s.cluster.devices_per_node, s.seed);
  p.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return p;
}

}  // namespace dtsim::sim

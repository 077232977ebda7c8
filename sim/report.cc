#include "sim/report.h"

#include "sim/jobs_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/units.h"
#include "plan/pipedream.h"
#include "plan/plan_export.h"
#include "sim/contention_note.h"
#include "sim/cost/kernel_evidence.h"
#include "sim/link_traffic.h"
#include "sim/statistics.h"

namespace dtsim::sim {
namespace {

std::string Fixed1(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", x);
  return text;
}


// The trace's thread of each rank's host (after the plan's streams).
constexpr int kHostThread = plan::kNumStreams;

bool HasHostSide(const Prediction& p) { return !p.setup.framework.empty(); }

double CommBytesPerIteration(const Prediction& p) {
  double bytes = 0;
  for (const plan::Collective& c : p.plan.collectives())
    if (c.iteration == 0) bytes += c.bytes;
  return bytes;
}

// Collectives of iteration 0 by what they reduce: parameter-gradient
// buckets (data parallelism), tensor-parallel activations and input
// gradients, and tied weights shared between pipeline stages.
struct CollectiveCounts {
  int gradient_buckets = 0;
  int activations = 0;
  int shared_weights = 0;
  int all_to_alls = 0;             // expert parallelism's, not among `activations`
  int parameter_gathers = 0;       // FSDP's all-gathers of a bucket's parameters
  double all_to_all_bytes = 0;     // their payloads per rank, summed
};

CollectiveCounts CountCollectives(const Prediction& p) {
  CollectiveCounts n;
  for (const plan::Collective& c : p.plan.collectives()) {
    if (c.iteration != 0) continue;
    if (c.op == plan::CollectiveOp::kAllToAll) {
      ++n.all_to_alls;
      n.all_to_all_bytes += c.bytes;
    } else if (c.activations) {
      ++n.activations;
    } else if (c.op == plan::CollectiveOp::kAllGather) {
      ++n.parameter_gathers;
    } else if (c.shared_op >= 0) {
      ++n.shared_weights;
    } else {
      ++n.gradient_buckets;
    }
  }
  return n;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The largest footprint of one device over the stages (0 when unknown).
double PeakDeviceBytes(const Prediction& p) {
  double peak = 0;
  for (const MemoryBreakdown& mb : p.memory.stages) peak = std::max(peak, mb.Total());
  return peak;
}


bool Fp8(const config::Scenario& s) { return s.workload.precision == hw::Precision::kFp8; }

// The mean device's compute time per step split as the plan's priced
// compute is (TaskCosts: FP8 GEMMs, FP8 casts and scale updates, the rest).
struct ComputeSplit {
  double fp8_gemm_s = 0, fp8_cast_s = 0, bf16_s = 0;
};
ComputeSplit SplitCompute(const Prediction& p) {
  ComputeSplit c;
  const double total = p.costs.compute_priced_s, compute = p.metrics.breakdown.compute_s;
  if (!(total > 0)) return c;
  c.fp8_gemm_s = compute * p.costs.fp8_gemm_s / total;
  c.fp8_cast_s = compute * p.costs.fp8_cast_s / total;
  c.bf16_s = compute - c.fp8_gemm_s - c.fp8_cast_s;
  return c;
}

// The variable placement the run used: the scenario's, else its framework's.
plan::PsPlacementSpec VariablePlacement(const config::Scenario& s) {
  return s.parallelism.parameter_server.variable_placement.value_or(
      s.workload.framework.ps_placement);
}

std::string TaskLabel(const Prediction& p, const plan::Task& t) {
  return plan::TaskLabel(p.plan, p.graph, t);
}

}  // namespace

ModelFigures ComputeModelFigures(const config::Scenario& scenario, const Prediction& p) {
  ModelFigures f;
  f.model_flops_per_sample = p.model_totals.fwd_flops + p.model_totals.bwd_flops;
  const double samples_per_s = p.metrics.throughput_samples_per_s;
  const int devices = scenario.cluster.num_devices();
  if (devices <= 0 || !(samples_per_s > 0)) return f;
  f.model_flops_per_device_per_s = f.model_flops_per_sample * samples_per_s / devices;
  const bool fp8 = scenario.workload.precision == hw::Precision::kFp8;
  double peak = p.device.PeakFlopRate(fp8 ? hw::Precision::kBf16 : scenario.workload.precision);
  if (!p.groups.empty()) {  // mixed: the devices' mean peak
    peak = 0;
    for (const GroupFigures& g : p.groups) peak += g.peak_flop_per_s * g.ranks / devices;
  }
  f.mfu = f.model_flops_per_device_per_s / peak;
  if (fp8) f.mfu_fp8_peak = f.model_flops_per_device_per_s / p.device.PeakFlopRate(hw::Precision::kFp8);
  f.tokens_per_s = samples_per_s * p.tokens_per_sample;
  return f;
}

namespace {

// The op-cost table's part of the priced compute (sim/cost/measured_costs.h).
struct CostShares {
  double seconds[kNumCostSources] = {0, 0, 0};
  double total = 0;
  double Share(CostSource c) const { return total > 0 ? seconds[static_cast<int>(c)] / total : 0; }
};
CostShares SharesOf(const Prediction& p) {
  CostShares c;
  for (int k = 0; k < kNumCostSources; ++k) {
    c.seconds[k] = p.costs.priced_by_source_s[k];
    c.total += c.seconds[k];
  }
  return c;
}

// The names of the first `n` ops the table could not price, and how many more.
std::string ModelledOpNames(const Prediction& p, std::size_t n) {
  std::string names;
  for (std::size_t i = 0; i < p.costs.modelled_ops.size() && i < n; ++i) {
    if (i) names += ", ";
    names += p.graph.op(static_cast<models::OpId>(p.costs.modelled_ops[i])).name;
  }
  if (p.costs.modelled_ops.size() > n)
    names += " and " + std::to_string(p.costs.modelled_ops.size() - n) + " more";
  return names;
}

}  // namespace

nlohmann::ordered_json CostSourcesJson(const config::Scenario& s, const Prediction& p) {
  if (s.workload.cost_table.empty()) return nullptr;
  const CostShares c = SharesOf(p);
  nlohmann::ordered_json j;
  j["cost_table"] = s.workload.cost_table;
  for (CostSource src : {CostSource::kMeasured, CostSource::kInterpolated, CostSource::kModelled}) {
    j[std::string(CostSourceName(src)) + "_s"] = c.seconds[static_cast<int>(src)];
    j[std::string(CostSourceName(src)) + "_share"] = c.Share(src);
  }
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (std::int32_t v : p.costs.modelled_ops) ops.push_back(p.graph.op(static_cast<models::OpId>(v)).name);
  j["modelled_ops"] = std::move(ops);
  return j;
}

namespace {
// Whether the kernel model priced (some of) the compute.
bool UsesKernelModel(const Prediction& p) {
  return p.setup.cost_model.find("kernels") != std::string::npos;
}
}  // namespace

namespace {

// "breakdown": where the step time goes (null when the plan does not fit).
void AddBreakdown(const config::Scenario& s, const Prediction& p, nlohmann::ordered_json& j) {
  const RunMetrics& m = p.metrics;
  const bool fits = p.does_not_fit.empty();
  const nlohmann::ordered_json none = nullptr;
  if (fits) {
    j["breakdown"] = {{"compute_s", m.breakdown.compute_s},
                      {"exposed_comm_s", m.breakdown.exposed_comm_s},
                      {"idle_s", m.breakdown.idle_s},
                      {"comm_total_s", m.breakdown.comm_s}};
    if (Fp8(s)) {
      const ComputeSplit c = SplitCompute(p);
      j["breakdown"]["compute_parts"] = {
          {"fp8_gemm_s", c.fp8_gemm_s}, {"fp8_cast_s", c.fp8_cast_s}, {"bf16_s", c.bf16_s}};
    }
    if (HasHostSide(p)) {
      j["breakdown"]["host_wait_s"] = m.breakdown.host_wait_s;
      j["breakdown"]["input_wait_s"] = m.breakdown.input_wait_s;
    }
  } else {
    j["breakdown"] = none;
  }
}

// "communication", and the synchronisation of local SGD and parameter servers.
void AddCommunication(const config::Scenario& s, const Prediction& p, nlohmann::ordered_json& j) {
  const CollectiveCounts counts = CountCollectives(p);
  j["communication"] = {{"buckets_per_iteration", counts.gradient_buckets},
                        {"tensor_parallel_allreduces_per_iteration", counts.activations},
                        {"shared_weight_allreduces_per_iteration", counts.shared_weights},
                        {"allreduce_bytes_per_iteration", CommBytesPerIteration(p)},
                        {"network_bytes_per_sample", p.comm.network_bytes_per_sample}};
  if (counts.parameter_gathers > 0)  // zero_stage 3 (plan/data_parallel.h, fsdp)
    j["communication"]["fsdp_parameter_gathers_per_iteration"] = counts.parameter_gathers;
  if (const ContextComm& cp = p.comm.context; cp.degree > 1) {
    // Per step and worker (sim/context_figures.h); null when the plan does not fit.
    const bool fits = p.does_not_fit.empty();
    const double step = p.metrics.step_time_s;
    j["communication"]["context_parallel"] = {
        {"degree", cp.degree},
        {"kind", plan::ContextParallelKindName(s.parallelism.hybrid.context_parallel_kind)},
        {"comm_s", fits ? nlohmann::ordered_json(cp.comm_s) : nullptr},
        {"exposed_s", fits ? nlohmann::ordered_json(cp.exposed_s) : nullptr},
        {"exposed_share_of_step", fits && step > 0 ? nlohmann::ordered_json(cp.exposed_s / step) : nullptr},
        {"bytes_per_step", fits ? nlohmann::ordered_json(cp.bytes) : nullptr}};
  }
  if (counts.all_to_alls > 0) {
    // Expert parallelism: the token all-to-alls of the materialized ranks
    // (one per stage in a symmetric plan), and their time on a device's
    // comm stream as a share of the step.
    const RunMetrics& m = p.metrics;
    j["communication"]["all_to_alls_per_iteration"] = counts.all_to_alls;
    j["communication"]["all_to_all_bytes_per_iteration"] = counts.all_to_all_bytes;
    j["communication"]["all_to_all_s"] = m.breakdown.all_to_all_s;
    j["communication"]["all_to_all_share"] =
        m.step_time_s > 0 ? m.breakdown.all_to_all_s / m.step_time_s : 0.0;
  }
  if (s.parallelism.strategy == config::Strategy::kLocalSgd) {
    j["local_sgd"] = {{"averaging_period", p.comm.averaging_period},
                      {"averaging", config::AveragingTransportName(s.parallelism.averaging)},
                      {"averaging_round_s", p.comm.averaging_round_s}};
    nlohmann::ordered_json levels = nlohmann::ordered_json::array();
    for (const config::AveragingLevel& l : s.parallelism.averaging_groups)
      levels.push_back({{"group_size", l.group_size}, {"period", l.period}});
    if (!levels.empty()) j["local_sgd"]["averaging_groups"] = levels;
    if (p.post_local) {
      const Prediction::PostLocal& pl = *p.post_local;
      j["local_sgd"]["post_local"] = {
          {"synchronous_steps", pl.synchronous_steps},
          {"synchronous_step_s", pl.synchronous_step_s},
          {"synchronous_throughput_samples_per_s", pl.synchronous_throughput_samples_per_s},
          {"synchronous_phase_s", pl.synchronous_phase_s}};
    }
  }
  if (!p.plan.ranks.empty() && p.plan.IsServer(p.plan.num_ranks() - 1)) {
    const auto& ps = s.parallelism.parameter_server;
    j["parameter_server"] = {
        {"servers", ps.servers},
        {"placement", config::ServerPlacementName(ps.placement)},
        {"device", ps.device},
        {"replicas_to_aggregate",
         ps.replicas_to_aggregate == 0 ? s.cluster.num_devices() : ps.replicas_to_aggregate},
        {"payload", config::PsPayloadName(ps.payload)},
        {"variable_placement", VariablePlacement(s).Describe()}};
    nlohmann::ordered_json servers = nlohmann::ordered_json::array();
    for (const ServerLoad& l : p.comm.server_loads)
      servers.push_back({{"rank", l.rank},
                         {"params", l.params},
                         {"bytes_per_step", l.bytes_per_step},
                         {"busy_s", l.busy_s}});
    j["parameter_server"]["per_server"] = servers;
  }
}

// Per-strategy detail: PipeDream's weight versions, asynchronous staleness, failures.
void AddStrategyDetail(const config::Scenario& s, const Prediction& p, nlohmann::ordered_json& j) {
  const RunMetrics& m = p.metrics;
  const bool fits = p.does_not_fit.empty();
  const nlohmann::ordered_json none = nullptr;
  if (s.parallelism.strategy == config::Strategy::kHybrid &&
      s.parallelism.hybrid.schedule == config::PipelineSchedule::kPipeDream2BW) {
    // Narayanan et al. 2021 (PipeDream-2BW), §3.1: W(t+1) = W(t) - lr
    // grad f(W(t-1)).
    j["pipedream_2bw"] = {{"weight_versions", 2}, {"weight_staleness", 1}};
  }
  if (!p.layout.stage_replicas.empty()) {
    // Narayanan et al. 2019 (PipeDream), §3.3: a version per minibatch in
    // flight; the gradient applied at a stage was computed on weights that
    // many updates minus one old.
    nlohmann::json versions = nlohmann::json::array(), staleness = nlohmann::json::array();
    for (int st = 0; st < static_cast<int>(p.layout.stage_replicas.size()); ++st) {
      const int v = plan::PipeDreamInFlight(p.layout.stage_replicas, st);
      versions.push_back(v);
      staleness.push_back(v - 1);
    }
    j["pipedream"] = {{"stage_replicas", p.layout.stage_replicas},
                      {"minibatches_per_iteration", plan::PipeDreamRound(p.layout.stage_replicas)},
                      {"weight_versions", versions},
                      {"weight_staleness", staleness},
                      {"partition", p.layout.partition_note}};
  }
  if (p.async) {
    const Summary& st = p.async->staleness;
    j["async"] = {{"global_steps_per_s", p.async->global_steps_per_s},
                  {"worker_steps_per_s", p.async->worker_steps_per_s},
                  {"worker_steps", p.async->worker_steps},
                  {"staleness", {{"updates", st.n}, {"mean", st.mean}, {"p50", st.p50},
                                 {"p99", st.p99}, {"max", st.max}}}};
  }
  if (p.failures) {
    const GoodputResult& f = *p.failures;
    j["failures"] = {{"goodput", f.goodput},
                     {"effective_throughput_samples_per_s",
                      fits ? nlohmann::ordered_json(f.goodput * m.throughput_samples_per_s) : none},
                     {"time_lost_s", f.time_lost_s},
                     {"checkpoint_time_s", f.checkpoint_time_s},
                     {"failures", f.failures},
                     {"checkpoints", f.checkpoints},
                     {"young_daly_interval_s", f.young_daly_interval_s},
                     {"first_order_goodput", f.first_order_goodput}};
  }
}

// "memory": the peak per device and per pipeline stage, and whether it fits.
void AddMemory(const Prediction& p, nlohmann::ordered_json& j) {
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (std::size_t st = 0; st < p.memory.stages.size(); ++st) {
    const MemoryBreakdown& mb = p.memory.stages[st];
    memory.push_back({{"stage", st},
                      {"rank", p.memory.stage_rank[st]},
                      {"total_bytes", mb.Total()},
                      {"params_bytes", mb.params_bytes},
                      {"grads_bytes", mb.grads_bytes},
                      {"optimizer_bytes", mb.optimizer_bytes},
                      {"activations_bytes", mb.activations_bytes},
                      {"runtime_bytes", mb.workspace_bytes}});
  }
  j["memory"] = {{"capacity_bytes", p.memory.capacity_bytes},
                 {"per_device_bytes", PeakDeviceBytes(p)},
                 {"fits", p.does_not_fit.empty()},
                 {"verdict", !p.does_not_fit.empty()     ? "does_not_fit"
                             : !p.memory_warning.empty() ? "tight"
                                                         : "fits"},
                 {"message", p.does_not_fit.empty() ? p.memory_warning : p.does_not_fit},
                 {"per_stage", memory}};
}

// "iteration_times" and "per_device" (empty when the plan does not fit).
void AddTimes(const Prediction& p, nlohmann::ordered_json& j) {
  const RunMetrics& m = p.metrics;
  const bool fits = p.does_not_fit.empty();
  nlohmann::ordered_json iters = nlohmann::ordered_json::array();
  double prev = 0;
  for (std::size_t i = 0; fits && i < m.iteration_end_s.size(); ++i) {
    iters.push_back({{"iteration", i}, {"end_s", m.iteration_end_s[i]},
                     {"duration_s", m.iteration_end_s[i] - prev}});
    prev = m.iteration_end_s[i];
  }
  j["iteration_times"] = iters;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (std::size_t r = 0; fits && r < m.per_rank.size(); ++r) {
    const Breakdown& b = m.per_rank[r];
    const auto id = static_cast<std::size_t>(m.ranks[r]);
    ranks.push_back({{"rank", m.ranks[r]},
                     {"node", p.plan.ranks[id].node},
                     {"local", p.plan.ranks[id].local},
                     {"compute_utilization", m.compute_utilization[r]},
                     {"compute_s", b.compute_s},
                     {"exposed_comm_s", b.exposed_comm_s},
                     {"idle_s", b.idle_s}});
  }
  j["per_device"] = ranks;
}

}  // namespace

nlohmann::ordered_json ReportJson(const config::Scenario& s, const Prediction& p) {
  // Jobs: the first job's report, named after the scenario, and every job's figures.
  if (!s.jobs.empty() && !p.jobs.empty()) {
    nlohmann::ordered_json j = ReportJson(s.jobs.front().scenario, p.jobs.front().shared);
    j["scenario"] = s.name;
    j["jobs"] = JobsJson(p);
    return j;
  }
  const RunMetrics& m = p.metrics;
  nlohmann::ordered_json j;
  j["scenario"] = s.name;
  j["engine"] = s.engine;
  if (const std::string note = ContentionNote(s, p.plan); !note.empty()) j["engine_note"] = note;
  j["seed"] = s.seed;
  j["model"] = p.graph.name();
  j["device"] = p.groups.empty() ? p.device.name : NodeGroupsDevices(p.groups);
  j["nodes"] = s.cluster.nodes;
  j["devices_per_node"] = s.cluster.devices_per_node;
  j["devices"] = s.cluster.num_devices();
  j["strategy"] = config::StrategyName(s.parallelism.strategy);
  j["sync"] = config::SyncModeName(s.parallelism.sync);
  j["algorithm"] = config::CollectiveAlgorithmName(s.parallelism.algorithm);
  j["precision"] = hw::PrecisionName(s.workload.precision);
  // hybrid does not use batch_per_device (micro-batches and global_batch
  // set its batch): null rather than a default that played no part.
  const bool uses_batch = s.parallelism.strategy != config::Strategy::kHybrid;
  j["batch_per_device"] =
      uses_batch ? nlohmann::ordered_json(s.workload.batch_per_device) : nlohmann::ordered_json();
  j["global_batch"] = p.plan.samples_per_iteration;
  j["iterations"] = p.plan.iterations;
  j["measured_iterations"] = m.measured_iterations;
  // A plan that does not fit gets no timing figures: null, and the reason.
  const bool fits = p.does_not_fit.empty();
  const nlohmann::ordered_json none = nullptr;
  j["throughput_samples_per_s"] = fits ? nlohmann::ordered_json(m.throughput_samples_per_s) : none;
  j["step_time_s"] = fits ? nlohmann::ordered_json(m.step_time_s) : none;
  j["step_time_percentiles"] =
      fits && m.step_times.n > 0
          ? nlohmann::ordered_json{{"steps", m.step_times.n}, {"p50_s", m.step_times.p50},
                                   {"p95_s", m.step_times.p95}, {"p99_s", m.step_times.p99},
                                   {"max_s", m.step_times.max}}
          : none;
  j["scaling_efficiency"] = fits ? nlohmann::ordered_json(p.scaling.efficiency) : none;
  const ModelFigures figures = ComputeModelFigures(s, p);
  if (p.tokens_per_sample > 0)
    j["tokens_per_s"] = fits ? nlohmann::ordered_json(figures.tokens_per_s) : none;
  j["model_flops_per_sample"] = figures.model_flops_per_sample;
  j["model_tflops_per_device"] =
      fits ? nlohmann::ordered_json(figures.model_flops_per_device_per_s / 1e12) : none;
  j["mfu"] = fits ? nlohmann::ordered_json(figures.mfu) : none;
  if (Fp8(s)) j["mfu_fp8_peak"] = fits ? nlohmann::ordered_json(figures.mfu_fp8_peak) : none;
  if (!fits) j["does_not_fit"] = p.does_not_fit;
  j["single_device_throughput_samples_per_s"] = p.scaling.single_device_throughput_samples_per_s;
  j["scaling_reference"] = p.scaling.reference;
  j["cost_model"] = p.setup.cost_model;
  j["slowest_gpu_pace"] = p.setup.slowest_gpu_pace;
  if (UsesKernelModel(p)) {
    const KernelEvidenceEntry e = KernelEvidenceFor(p.device.arch);
    j["kernel_model_evidence"] = {{"generation", hw::GpuArchName(p.device.arch)},
                                  {"level", KernelEvidenceName(e.level)},
                                  {"basis", e.basis}};
  }
  if (p.costs.compute_priced_s > 0 && !s.workload.cost_table.empty())
    j["cost_sources"] = CostSourcesJson(s, p);
  if (HasHostSide(p)) j["framework"] = p.setup.framework;
  if (!p.setup.transport.empty()) j["transport"] = p.setup.transport;
  AddBreakdown(s, p, j);
  if (!p.groups.empty()) j["node_groups"] = NodeGroupsJson(s, p.groups);
  const models::GraphTotals& totals = p.model_totals;
  j["model_totals"] = {{"params", totals.params},
                       {"fwd_flops_per_sample", totals.fwd_flops},
                       {"bwd_flops_per_sample", totals.bwd_flops}};
  AddCommunication(s, p, j);
  AddStrategyDetail(s, p, j);
  AddMemory(p, j);
  j["materialized_workers"] = p.layout.materialized_workers;
  AddTimes(p, j);
  j["simulation"] = {{"tasks", p.plan.num_tasks()},
                     {"collectives", p.plan.collectives().size()},
                     {"events", p.engine.events},
                     {"simulated_time_s", NsToSeconds(p.engine.makespan)}};
  if (s.outputs.link_traffic > 0 && p.does_not_fit.empty())
    j["link_traffic"] = LinkTrafficJson(ComputeLinkTraffic(p, s.outputs.link_traffic));
  return j;
}

std::string CsvHeader() {
  return "scenario,model,device,nodes,devices_per_node,devices,algorithm,precision,"
         "batch_per_device,global_batch,throughput_samples_per_s,step_time_s,"
         "scaling_efficiency,compute_s,exposed_comm_s,idle_s,strategy,sync,averaging_period,"
         "network_bytes_per_sample,goodput,memory_per_device_bytes,fits,infeasible,tokens_per_s,"
         "model_tflops_per_device,mfu,step_time_p50_s,step_time_p95_s,step_time_p99_s";
}

std::string CsvRow(const config::Scenario& s, const Prediction& p) {
  if (!s.jobs.empty() && !p.jobs.empty()) return CsvRow(s.jobs.front().scenario, p.jobs.front().shared);
  const RunMetrics& m = p.metrics;
  const bool fits = p.does_not_fit.empty();
  std::ostringstream o;
  o.precision(10);
  // Timing columns of a plan that does not fit stay empty: no number that
  // could be read as a prediction.
  auto timed = [&](double v) {
    if (fits) o << v;
    o << ',';
  };
  o << s.name << ',' << p.graph.name() << ',' << p.device.name << ',' << s.cluster.nodes << ','
    << s.cluster.devices_per_node << ',' << s.cluster.num_devices() << ','
    << config::CollectiveAlgorithmName(s.parallelism.algorithm) << ','
    << hw::PrecisionName(s.workload.precision) << ','
    << (s.parallelism.strategy != config::Strategy::kHybrid
            ? std::to_string(s.workload.batch_per_device)
            : std::string())
    << ','
    << p.plan.samples_per_iteration << ',';
  timed(m.throughput_samples_per_s);
  timed(m.step_time_s);
  timed(p.scaling.efficiency);
  timed(m.breakdown.compute_s);
  timed(m.breakdown.exposed_comm_s);
  timed(m.breakdown.idle_s);
  o << config::StrategyName(s.parallelism.strategy) << ','
    << config::SyncModeName(s.parallelism.sync) << ',' << p.comm.averaging_period << ','
    << p.comm.network_bytes_per_sample << ',';
  timed(p.failures ? p.failures->goodput : 1.0);
  o << PeakDeviceBytes(p) << ',' << (fits ? "true" : "false") << ','
    << CsvField(p.does_not_fit) << ',';
  const ModelFigures figures = ComputeModelFigures(s, p);
  if (fits && p.tokens_per_sample > 0) o << figures.tokens_per_s;
  o << ',';
  timed(figures.model_flops_per_device_per_s / 1e12);
  timed(figures.mfu);
  const bool spread = fits && m.step_times.n > 0;
  if (spread) o << m.step_times.p50;
  o << ',';
  if (spread) o << m.step_times.p95;
  o << ',';
  if (spread) o << m.step_times.p99;
  return o.str();
}

void WriteChromeTrace(std::ostream& out, const Prediction& p, int max_ranks, int link_counters) {
  if (!p.jobs.empty()) return WriteJobsChromeTrace(out, p, max_ranks);
  const int ranks = std::min(max_ranks, p.plan.num_ranks());
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const nlohmann::ordered_json& e) {
    if (!first) out << ",\n";
    first = false;
    out << e.dump();
  };
  for (int r = 0; r < ranks; ++r) {
    const auto& pl = p.plan.ranks[static_cast<std::size_t>(r)];
    emit({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
          {"args", {{"name", "rank " + std::to_string(r) + " (node " + std::to_string(pl.node) +
                                 ", " + p.device.name + " " + std::to_string(pl.local) + ")"}}}});
    emit({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    for (int s = 0; s < plan::kNumStreams; ++s)
      emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", s},
            {"args", {{"name", plan::StreamKindName(static_cast<plan::StreamKind>(s))}}}});
    if (!p.engine.host_begin.empty() && !p.plan.IsServer(r))
      emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", kHostThread},
            {"args", {{"name", "host"}}}});
  }
  // Memory over time of each traced worker (a counter track): static bytes
  // of its stage plus the activations its micro-batches keep.
  for (int r = 0; r < ranks; ++r) {
    if (!p.plan.IsMaterialized(r) || p.plan.IsServer(r) || p.memory.stages.empty()) continue;
    const auto stage = static_cast<std::size_t>(
        plan::HybridStageOfRank(p.layout.hybrid, p.plan.num_ranks(), r));
    const double static_bytes = p.memory.stages[std::min(stage, p.memory.stages.size() - 1)].StaticBytes();
    // The plan's graph is already one tensor rank's share: t = 1 here.
    for (const auto& [time, bytes] : MemoryTimeline(p.plan, p.graph, p.engine, r, static_bytes, 1, p.memory.recompute,
                                                      p.memory.recompute_per_stage, p.memory.recompute_selective))
      emit({{"name", "memory"}, {"ph", "C"}, {"pid", r},
            {"ts", static_cast<double>(time) / 1000.0}, {"args", {{"GiB", bytes / kGiB}}}});
  }
  for (std::size_t t = 0; t < p.plan.num_tasks(); ++t) {
    const plan::Task& task = p.plan.tasks()[t];
    if (task.rank >= ranks) continue;
    const TaskTiming& tm = p.engine.timing[t];
    if (tm.end == tm.start) continue;
    emit({{"name", TaskLabel(p, task)},
          {"cat", plan::TaskKindName(task.kind)},
          {"ph", "X"},
          {"pid", task.rank},
          {"tid", static_cast<int>(task.stream)},
          {"ts", static_cast<double>(tm.start) / 1000.0},
          {"dur", static_cast<double>(tm.end - tm.start) / 1000.0},
          {"args", {{"iteration", task.iteration}}}});
    if (!p.engine.host_begin.empty() && p.engine.host_end[t] > p.engine.host_begin[t])
      emit({{"name", "issue " + TaskLabel(p, task)},
            {"cat", "host"},
            {"ph", "X"},
            {"pid", task.rank},
            {"tid", kHostThread},
            {"ts", static_cast<double>(p.engine.host_begin[t]) / 1000.0},
            {"dur", static_cast<double>(p.engine.host_end[t] - p.engine.host_begin[t]) / 1000.0},
            {"args", {{"iteration", task.iteration}}}});
  }
  if (link_counters > 0 && p.does_not_fit.empty())
    for (const auto& e : LinkCounterEvents(ComputeLinkTraffic(p, link_counters), ranks)) emit(e);
  out << "\n]}\n";
}

nlohmann::ordered_json RepeatsJson(std::uint64_t first_seed, const std::vector<double>& throughput,
                                   const std::vector<double>& step_time) {
  auto summary = [](const std::vector<double>& v) {
    const Summary x = Summarize(v);
    return nlohmann::ordered_json{{"mean", x.mean}, {"ci95_half_width", x.ci95_half_width},
                                  {"stddev", x.stddev}, {"min", x.min}, {"max", x.max}};
  };
  return {{"n", throughput.size()},
          {"seeds", {first_seed, first_seed + throughput.size() - 1}},
          {"throughput_samples_per_s", summary(throughput)},
          {"step_time_s", summary(step_time)}};
}

std::string RepeatsLog(const std::vector<double>& throughput, const std::vector<double>& step_time) {
  const Summary t = Summarize(throughput), st = Summarize(step_time);
  char line[256];
  std::snprintf(line, sizeof line,
                "over %d seeds: throughput %.1f +- %.1f samples/s, step %s +- %s (95%% CI)\n", t.n,
                t.mean, t.ci95_half_width, FormatSeconds(st.mean).c_str(),
                FormatSeconds(st.ci95_half_width).c_str());
  return line;
}

std::string StepLog(const config::Scenario& s, const Prediction& p) {
  if (!s.jobs.empty() && !p.jobs.empty())
    return "first job: " + StepLog(s.jobs.front().scenario, p.jobs.front().shared) + JobsLog(p);
  const RunMetrics& m = p.metrics;
  std::ostringstream o;
  char line[256];
  std::string how = config::StrategyName(s.parallelism.strategy);
  if (s.parallelism.strategy == config::Strategy::kParameterServer) {
    how += std::string(" (") + config::SyncModeName(s.parallelism.sync) + ", " +
           std::to_string(s.parallelism.parameter_server.servers) + " server(s))";
  } else {
    how += std::string(", ") + config::CollectiveAlgorithmName(s.parallelism.algorithm) +
           " all-reduce";
  }
  const std::string devices = p.groups.empty()
                                  ? std::to_string(s.cluster.num_devices()) + " x " + p.device.name
                                  : NodeGroupsDevices(p.groups);
  std::snprintf(line, sizeof line, "%s: %s on %s (%d node%s), %s, %s\n", s.name.c_str(),
                p.graph.name().c_str(), devices.c_str(),
                s.cluster.nodes, s.cluster.nodes == 1 ? "" : "s",
                hw::PrecisionName(s.workload.precision), how.c_str());
  o << line;
  const auto memory_lines = [&] {
    for (std::size_t st = 0; st < p.memory.stages.size(); ++st) {
      const MemoryBreakdown& mb = p.memory.stages[st];
      std::snprintf(line, sizeof line,
                    "memory%s: %.1f of %.1f GiB (parameters %.1f, gradients %.1f, optimizer "
                    "state %.1f, activations %.1f%s)\n",
                    p.memory.stages.size() > 1 ? (" stage " + std::to_string(st)).c_str()
                                              : " per device",
                    mb.Total() / kGiB, p.memory.capacity_bytes / kGiB, mb.params_bytes / kGiB,
                    mb.grads_bytes / kGiB, mb.optimizer_bytes / kGiB,
                    mb.activations_bytes / kGiB,
                    mb.workspace_bytes > 0
                        ? (", CUDA/NCCL runtime " + Fixed1(mb.workspace_bytes / kGiB)).c_str()
                        : "");
      o << line;
    }
  };
  // A plan that does not fit has no timing: no step, rate or time figure.
  if (!p.does_not_fit.empty()) {
    memory_lines();
    o << p.does_not_fit << "\n";
    return o.str();
  }
  double prev = 0;
  for (std::size_t i = 0; i < m.iteration_end_s.size(); ++i) {
    const double dt = m.iteration_end_s[i] - prev;
    prev = m.iteration_end_s[i];
    std::snprintf(line, sizeof line, "step %zu, loss = n/a (%.1f examples/sec; %.4f sec/batch)%s\n",
                  i + 1, static_cast<double>(p.plan.samples_per_iteration) / dt, dt,
                  static_cast<int>(i) < m.first_measured_iteration ? "  [warm-up]" : "");
    o << line;
  }
  if (!p.comm.server_loads.empty()) {
    o << "servers (" << VariablePlacement(s).Describe() << "), per step:";
    for (std::size_t i = 0; i < p.comm.server_loads.size(); ++i) {
      const ServerLoad& l = p.comm.server_loads[i];
      std::snprintf(line, sizeof line, "%s %zu: %.1f MB, link busy %s", i == 0 ? "" : ";", i,
                    l.bytes_per_step / 1e6, FormatSeconds(l.busy_s).c_str());
      o << line;
    }
    o << "\n";
  }
  if (p.async) {
    const Summary& st = p.async->staleness;
    std::snprintf(line, sizeof line,
                  "asynchronous: %.2f global steps/s; staleness of %d applied updates: mean %.2f, "
                  "p50 %.1f, p99 %.1f, max %.0f\n",
                  p.async->global_steps_per_s, st.n, st.mean, st.p50, st.p99, st.max);
    o << line;
  }
  if (s.parallelism.strategy == config::Strategy::kHybrid &&
      s.parallelism.hybrid.schedule == config::PipelineSchedule::kPipeDream2BW) {
    std::snprintf(line, sizeof line,
                  "PipeDream-2BW: no pipeline flush (measured over iterations %d-%d, clear of the "
                  "fill and the drain); 2 weight versions, gradients 1 version stale\n",
                  m.first_measured_iteration + 1,
                  m.first_measured_iteration + m.measured_iterations);
    o << line;
  }
  if (!p.layout.stage_replicas.empty()) {
    std::string replicas, versions;
    for (int st = 0; st < static_cast<int>(p.layout.stage_replicas.size()); ++st) {
      if (st > 0) {
        replicas += '-';
        versions += ", ";
      }
      replicas += std::to_string(p.layout.stage_replicas[static_cast<std::size_t>(st)]);
      versions += std::to_string(plan::PipeDreamInFlight(p.layout.stage_replicas, st));
    }
    o << "PipeDream: stages replicated " << replicas << " (" << p.layout.partition_note
      << "), an update per minibatch, no flush (measured over iterations "
      << m.first_measured_iteration + 1 << "-" << m.first_measured_iteration + m.measured_iterations
      << " of " << plan::PipeDreamRound(p.layout.stage_replicas) << " minibatch(es)); weight versions per stage "
      << versions << ", gradients that many minus one updates stale\n";
  }
  if (s.parallelism.strategy == config::Strategy::kLocalSgd) {
    std::snprintf(line, sizeof line,
                  "local SGD: averaging every %d steps; an averaging round (%d steps = %d x the "
                  "mean step time, averaging included) takes %s\n",
                  p.comm.averaging_period, p.comm.averaging_period, p.comm.averaging_period,
                  FormatSeconds(p.comm.averaging_round_s).c_str());
    o << line;
    for (const config::AveragingLevel& l : s.parallelism.averaging_groups) {
      std::snprintf(line, sizeof line, "  and within groups of %d ranks every %d steps\n",
                    l.group_size, l.period);
      o << line;
    }
    if (p.post_local) {
      const Prediction::PostLocal& pl = *p.post_local;
      std::snprintf(line, sizeof line,
                    "post-local SGD: the first %d steps synchronous (gradients all-reduced every "
                    "step): %s per step, %.1f samples/s, %s in all; the figures below are the "
                    "local phase's\n",
                    pl.synchronous_steps, FormatSeconds(pl.synchronous_step_s).c_str(),
                    pl.synchronous_throughput_samples_per_s,
                    FormatSeconds(pl.synchronous_phase_s).c_str());
      o << line;
    }
  }
  std::snprintf(line, sizeof line, "network: %s per sample\n",
                FormatBytes(p.comm.network_bytes_per_sample).c_str());
  o << line;
  if (!p.setup.transport.empty()) o << "transport: " << p.setup.transport << "\n";
  if (p.failures) {
    const GoodputResult& f = *p.failures;
    std::snprintf(line, sizeof line,
                  "failures: %d in %s; goodput %.1f%% (first-order Young/Daly %.1f%%), %s lost, "
                  "%s checkpointing; Young/Daly interval %s\n",
                  f.failures, FormatSeconds(s.failures.horizon_s).c_str(), 100 * f.goodput,
                  100 * f.first_order_goodput, FormatSeconds(f.time_lost_s).c_str(),
                  FormatSeconds(f.checkpoint_time_s).c_str(),
                  FormatSeconds(f.young_daly_interval_s).c_str());
    o << line;
  }
  memory_lines();
  std::snprintf(line, sizeof line,
                "throughput: %.1f samples/s (global batch %lld, step %s)\n"
                "single device: %.1f samples/s; scaling efficiency: %.1f%%\n",
                m.throughput_samples_per_s, static_cast<long long>(p.plan.samples_per_iteration),
                FormatSeconds(m.step_time_s).c_str(), p.scaling.single_device_throughput_samples_per_s,
                100.0 * p.scaling.efficiency);
  o << line;
  if (m.step_times.n > 0) {
    // Fewer than 100 steps put p99 between the two longest: say so.
    std::snprintf(line, sizeof line, "step time over %d %s: p50 %s, p95 %s, p99 %s, max %s%s\n",
                  m.step_times.n,
                  p.async ? "worker steps" : (m.step_times.n == 1 ? "measured step" : "measured steps"),
                  FormatSeconds(m.step_times.p50).c_str(), FormatSeconds(m.step_times.p95).c_str(),
                  FormatSeconds(m.step_times.p99).c_str(), FormatSeconds(m.step_times.max).c_str(),
                  m.step_times.n < 100 && m.step_times.max > m.step_times.min
                      ? " (under 100 steps: raise workload.iterations for the tail)"
                      : "");
    o << line;
  }
  const ModelFigures figures = ComputeModelFigures(s, p);
  if (p.tokens_per_sample > 0) {
    std::snprintf(line, sizeof line, "tokens: %.1f tokens/s (%.0f per sample)\n",
                  figures.tokens_per_s, p.tokens_per_sample);
    o << line;
  }
  const std::string peak_of = p.groups.empty() ? p.device.name + "'s" : "the devices' mean";
  std::snprintf(line, sizeof line,
                "model FLOPs: %.2f TFLOP/s per device, MFU %.1f%% of %s %s peak "
                "(forward + backward of the model, %.4g GFLOP per sample, no recomputation)\n",
                figures.model_flops_per_device_per_s / 1e12, 100.0 * figures.mfu,
                peak_of.c_str(),
                hw::PrecisionName(Fp8(s) ? hw::Precision::kBf16 : s.workload.precision),
                figures.model_flops_per_sample / 1e9);
  o << line;
  if (Fp8(s)) {
    std::snprintf(line, sizeof line, "  MFU against the FP8 peak: %.1f%%\n",
                  100.0 * figures.mfu_fp8_peak);
    o << line;
  }
  if (figures.mfu > 1.0)
    o << "  MFU above 100%: the device work priced for this plan is below the model's FLOP "
         "count (the kernel model's Winograd or FFT convolutions do fewer multiplications "
         "than direct ones)\n";
  const double step = std::max(m.step_time_s, 1e-30);
  std::snprintf(line, sizeof line,
                "breakdown per step (mean over devices): compute %s (%.1f%%), exposed comm %s "
                "(%.1f%%), idle %s (%.1f%%); comm total %s\n",
                FormatSeconds(m.breakdown.compute_s).c_str(), 100 * m.breakdown.compute_s / step,
                FormatSeconds(m.breakdown.exposed_comm_s).c_str(),
                100 * m.breakdown.exposed_comm_s / step, FormatSeconds(m.breakdown.idle_s).c_str(),
                100 * m.breakdown.idle_s / step, FormatSeconds(m.breakdown.comm_s).c_str());
  o << line;
  if (const ContextComm& cp = p.comm.context; cp.degree > 1) {
    std::snprintf(line, sizeof line,
                  "  context parallel %d (%s): transfers %s per step, exposed %s (%.1f%% of the "
                  "step)\n",
                  cp.degree, plan::ContextParallelKindName(s.parallelism.hybrid.context_parallel_kind),
                  FormatSeconds(cp.comm_s).c_str(), FormatSeconds(cp.exposed_s).c_str(),
                  100 * cp.exposed_s / step);
    o << line;
  }
  if (const CollectiveCounts counts = CountCollectives(p); counts.all_to_alls > 0) {
    std::snprintf(line, sizeof line,
                  "  of which expert all-to-alls %s (%.1f%% of the step; not overlapped: each "
                  "layer's experts wait for their tokens)\n",
                  FormatSeconds(m.breakdown.all_to_all_s).c_str(),
                  100 * m.breakdown.all_to_all_s / step);
    o << line;
  }
  if (Fp8(s)) {
    const ComputeSplit c = SplitCompute(p);
    std::snprintf(line, sizeof line,
                  "  compute by kernel (fp8): FP8 GEMMs %s (%.1f%%), FP8 casts and scale updates "
                  "%s (%.1f%%), bf16/fp32 kernels %s (%.1f%%)\n",
                  FormatSeconds(c.fp8_gemm_s).c_str(), 100 * c.fp8_gemm_s / step,
                  FormatSeconds(c.fp8_cast_s).c_str(), 100 * c.fp8_cast_s / step,
                  FormatSeconds(c.bf16_s).c_str(), 100 * c.bf16_s / step);
    o << line;
  }
  if (UsesKernelModel(p)) {
    const KernelEvidenceEntry e = KernelEvidenceFor(p.device.arch);
    if (e.level != KernelEvidence::kKernelTimes)
      o << "kernel model on " << hw::GpuArchName(p.device.arch) << " (" << p.device.name
        << "): " << KernelEvidenceName(e.level) << ", " << e.basis << "\n";
  }
  if (p.costs.compute_priced_s > 0 && !s.workload.cost_table.empty()) {
    const CostShares c = SharesOf(p);
    std::snprintf(line, sizeof line, "measured %.1f%%, interpolated %.1f%%, modelled %.1f%%",
                  100 * c.Share(CostSource::kMeasured), 100 * c.Share(CostSource::kInterpolated),
                  100 * c.Share(CostSource::kModelled));
    o << "priced compute (" << s.workload.cost_table << "): " << line;
    if (!p.costs.modelled_ops.empty()) o << " (modelled: " << ModelledOpNames(p, 5) << ")";
    o << "\n";
  }
  if (HasHostSide(p)) {
    std::snprintf(line, sizeof line,
                  "host and input (%s): host-bound %.1f%% of the step (%s), input-bound %.1f%% "
                  "of the step (%s)\n",
                  p.setup.framework.c_str(), 100 * m.breakdown.host_wait_s / step,
                  FormatSeconds(m.breakdown.host_wait_s).c_str(), 100 * m.breakdown.input_wait_s / step,
                  FormatSeconds(m.breakdown.input_wait_s).c_str());
    o << line;
  }
  if (!p.groups.empty()) o << NodeGroupsText(s, p.groups);
  double lo = 1, hi = 0, sum = 0;
  for (double u : m.compute_utilization) {
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
  }
  const double mean = m.compute_utilization.empty() ? 0 : sum / m.compute_utilization.size();
  std::snprintf(line, sizeof line, "device compute utilization: mean %.1f%%, min %.1f%%, max %.1f%%\n",
                100 * mean, 100 * lo, 100 * hi);
  o << line;
  if (m.per_rank.size() <= 16) {
    for (std::size_t r = 0; r < m.per_rank.size(); ++r) {
      const Breakdown& b = m.per_rank[r];
      const auto& where = p.plan.ranks[static_cast<std::size_t>(m.ranks[r])];
      std::string device = p.device.name;
      for (const GroupFigures& g : p.groups)
        if (m.ranks[r] >= g.first_rank && m.ranks[r] < g.first_rank + g.ranks) device = g.device;
      std::snprintf(line, sizeof line,
                    "  rank %d (node %d, %s %d): compute %.1f%%, exposed comm %.1f%%, idle %.1f%%\n",
                    m.ranks[r], where.node, device.c_str(), where.local,
                    100 * b.compute_s / step, 100 * b.exposed_comm_s / step, 100 * b.idle_s / step);
      o << line;
    }
  }
  if (s.outputs.link_traffic > 0) o << LinkTrafficLog(ComputeLinkTraffic(p, s.outputs.link_traffic));
  return o.str();
}

std::string CsvField(const std::string& text) {
  const bool quote = text.find_first_of(",\"\r\n") != std::string::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace dtsim::sim

#include "study/search.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/error.h"
#include "plan/context_parallel.h"
#include "plan/expert_parallel.h"
#include "plan/layers.h"
#include "sim/memory.h"

namespace dtsim::study {
namespace {

using config::PipelineSchedule;
using config::Strategy;

constexpr double kGiB = 1024.0 * 1024 * 1024;

enum class Recompute { kNone, kSelective, kFull };
const char* RecomputeName(Recompute r) {
  return r == Recompute::kNone ? "none" : r == Recompute::kSelective ? "selective" : "full";
}

struct Candidate {
  int devices, data, tensor, pipeline, micro_batch;
  PipelineSchedule schedule;
  int zero_stage;
  Recompute recompute;
  int context = 1;
  int expert = 1;  // expert_parallel
};

std::vector<int> DefaultDeviceCounts(const config::ClusterConfig& c) {
  std::vector<int> out;
  for (int nodes = c.nodes; nodes >= 1; nodes /= 2) {
    out.push_back(nodes * c.devices_per_node);
    if (nodes % 2 != 0) break;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// A lower bound on the largest device's memory: its share of the
// parameters, gradients and optimizer state. The stages' static bytes add
// up to the whole model's (tied copies only add), so the largest stage
// holds at least 1/p of them. `in`: the scenario's inputs over every op
// (MemoryInputs of the whole model); the candidate's fields are set in it
// (no copy of its op list per candidate).
double StaticLowerBound(sim::MemoryInputs& in, const Candidate& c) {
  in.tensor_parallel = c.tensor;
  in.data_parallel = c.data * c.context;  // ZeRO shards over data x context ranks
  in.expert_parallel = c.expert;
  in.zero_stage = c.zero_stage;
  in.micro_batch_size = c.micro_batch;
  in.micro_batches_in_flight = 0;
  return DeviceMemory(in).StaticBytes() / c.pipeline;
}

config::Scenario CandidateScenario(const config::Scenario& base, std::int64_t global_batch,
                                   const Candidate& c) {
  config::Scenario s = base;
  if (c.devices % base.cluster.devices_per_node == 0) {
    s.cluster.nodes = c.devices / base.cluster.devices_per_node;
  } else {
    s.cluster.nodes = 1;
    s.cluster.devices_per_node = c.devices;
  }
  s.engine = "analytic";
  s.outputs.trace = false;
  auto& par = s.parallelism;
  par.zero_stage = c.zero_stage;
  par.recompute = c.recompute == Recompute::kFull;
  par.recompute_selective = c.recompute == Recompute::kSelective;
  if (c.tensor == 1 && c.pipeline == 1 && c.context == 1 && c.expert == 1 &&
      static_cast<std::int64_t>(c.data) * c.micro_batch == global_batch) {
    // Plain data parallelism: the simulator's fast path.
    par.strategy = Strategy::kData;
    s.workload.batch_per_device = c.micro_batch;
    par.hybrid = config::HybridConfig{};
    return s;
  }
  par.strategy = Strategy::kHybrid;
  auto& h = par.hybrid;
  h = config::HybridConfig{};
  h.tensor_parallel = c.tensor;
  h.pipeline_parallel = c.pipeline;
  h.micro_batch_size = c.micro_batch;
  h.global_batch = static_cast<int>(global_batch);
  h.schedule = c.schedule;
  h.context_parallel = c.context;
  h.virtual_stages = c.schedule == PipelineSchedule::kInterleaved ? 2 : 1;
  h.expert_parallel = c.expert;
  return s;
}

SweepAxis MakeAxis(const char* path, bool numeric) {
  SweepAxis a;
  a.path = path;
  a.numeric = numeric;
  return a;
}

// The index of `value` in the axis's values, added when new.
std::size_t ValueIndex(SweepAxis& axis, const std::string& value) {
  const auto it = std::find(axis.values.begin(), axis.values.end(), value);
  if (it != axis.values.end()) return static_cast<std::size_t>(it - axis.values.begin());
  axis.values.push_back(value);
  return axis.values.size() - 1;
}

}  // namespace

Search BuildSearch(const config::Scenario& base, const models::ModelGraph& graph,
                   const SearchSpace& space) {
  const auto& par = base.parallelism;
  if (par.strategy == Strategy::kParameterServer || par.strategy == Strategy::kLocalSgd)
    throw UserError(base.Where("parallelism.strategy"),
                    "dtsim search varies data, tensor and pipeline parallelism; parameter "
                    "servers and local SGD are not searched",
                    "sweep their settings with dtsim sweep instead");
  if (!base.stragglers.Empty())
    throw UserError(base.Where("stragglers"),
                    "dtsim search assumes identical devices; the scenario has stragglers",
                    "remove the stragglers section to search");
  if (!base.cluster.node_groups.empty())
    throw UserError(base.Where("cluster.node_groups"),
                    "dtsim search assumes identical devices; the cluster has node groups",
                    "search one group's hardware as a cluster of its own (cluster.nodes, "
                    "cluster.device)");
  Search out;
  out.global_batch = par.strategy == Strategy::kHybrid && par.hybrid.global_batch > 0
                         ? par.hybrid.global_batch
                         : std::int64_t{base.workload.batch_per_device} * base.cluster.nodes *
                               base.cluster.devices_per_node;
  if (out.global_batch > kMaxSearchGlobalBatch)
    throw UserError(base.Where(par.hybrid.global_batch > 0 ? "parallelism.global_batch"
                                                           : "workload.batch_per_device"),
                    "dtsim search: a global batch of " + std::to_string(out.global_batch) +
                        " samples is more than the " + std::to_string(kMaxSearchGlobalBatch) +
                        " it splits",
                    "the largest published data-parallel batches are about 10^5 samples");
  const std::vector<int> counts =
      space.devices.empty() ? DefaultDeviceCounts(base.cluster) : space.devices;
  const int units = static_cast<int>(plan::LayerUnits(graph).size());
  const bool attention = !plan::AttentionCores(graph).empty();
  // Context parallelism (ring attention) for long sequences: the degrees
  // of space.context_parallel that split the model's sequence.
  std::vector<int> contexts = {1};
  const std::int64_t sequence = plan::SequenceLength(graph);
  const bool context_axis = attention && sequence >= space.context_min_sequence;
  if (context_axis)
    for (const int c : space.context_parallel)
      if (c > 1 && plan::ContextParallelProblem(graph, {c, plan::ContextParallelKind::kRing}).empty())
        contexts.push_back(c);
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(base);
  const hw::DeviceSpec* device = catalog.FindDevice(base.cluster.device);
  if (device == nullptr) throw UserError("unknown device '" + base.cluster.device + "'");
  sim::MemoryInputs whole;  // the model's state, for StaticLowerBound
  whole.graph = &graph;
  for (models::OpId v = 0; v < static_cast<models::OpId>(graph.num_ops()); ++v)
    whole.ops.push_back(v);
  whole.optimizer = base.parallelism.optimizer;
  whole.mixed_precision = hw::IsMixedPrecision(base.workload.precision);
  whole.fp32_grads = base.workload.framework.fp32_grads;
  whole.fp8 = base.workload.precision == hw::Precision::kFp8;

  Sweep& sweep = out.sweep;
  sweep.name = base.name;
  sweep.out_dir =
      (base.outputs.dir.empty() ? "results/" + base.name : base.outputs.dir) + "/search";
  // "search." keeps them apart from sweep.csv's own columns (devices).
  sweep.axes = {MakeAxis("search.devices", true),          MakeAxis("search.data_parallel", true),
                MakeAxis("search.tensor_parallel", true),  MakeAxis("search.pipeline_parallel", true),
                MakeAxis("search.micro_batch_size", true), MakeAxis("search.schedule", false),
                MakeAxis("search.zero_stage", true),       MakeAxis("search.recompute", false)};
  if (context_axis) sweep.axes.push_back(MakeAxis("search.context_parallel", true));
  // Mixture of experts: expert_parallel over the divisors of d that divide
  // the experts (simulated with t = 1).
  const int experts = plan::ModelExperts(graph);
  if (experts > 0) sweep.axes.push_back(MakeAxis("search.expert_parallel", true));
  for (const int n : counts) {
    if (n < 1 || (n > base.cluster.devices_per_node && n % base.cluster.devices_per_node != 0))
      throw UserError("dtsim search: " + std::to_string(n) +
                          " devices are neither part of one node nor whole nodes of " +
                          std::to_string(base.cluster.devices_per_node));
    for (const int t : space.tensor_parallel) {
      if (t < 1 || n % t != 0 || std::min(n, base.cluster.devices_per_node) % t != 0) continue;
     for (const int cp : contexts) {
      if ((n / t) % cp != 0) continue;
      for (int p = 1; p <= n / (t * cp) && p <= units; ++p) {
        if ((n / (t * cp)) % p != 0) continue;
        const int d = n / (t * p * cp);
        std::vector<int> sizes = space.micro_batch_sizes;
        if (sizes.empty()) {
          const std::int64_t replica = out.global_batch / d;
          for (std::int64_t m = 1; m <= replica && m <= INT32_MAX; m *= 2)
            if (replica % m == 0) sizes.push_back(static_cast<int>(m));
          if (replica <= INT32_MAX && (sizes.empty() || sizes.back() != replica))
            sizes.push_back(static_cast<int>(replica));
        }
        for (const int m : sizes) {
          if (m < 1 || out.global_batch % (static_cast<std::int64_t>(d) * m) != 0) continue;
          const std::int64_t micro_batches = out.global_batch / (static_cast<std::int64_t>(d) * m);
          std::vector<PipelineSchedule> schedules = {PipelineSchedule::kOneFOneB};
          if (p > 1) {
            schedules.push_back(PipelineSchedule::kGpipe);
            if (micro_batches % p == 0 && 2 * p <= units)
              schedules.push_back(PipelineSchedule::kInterleaved);
          }
          for (const PipelineSchedule schedule : schedules) {
            for (const int z : space.zero_stages) {
              // ZeRO shards over the replicas (and context ranks).
              if (z < 0 || z > 3 || (z > 0 && d * cp == 1)) continue;
              for (const Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
                if (r == Recompute::kSelective && !attention) continue;
                // Expert parallelism needs t = 1 and no context parallelism.
                const int ep_max = t == 1 && cp == 1 ? std::max(1, std::min(d, experts)) : 1;
                for (int ep = 1; ep <= ep_max; ++ep) {
                  if (ep > 1 && (d % ep != 0 || experts % ep != 0)) continue;
                  const Candidate c{n, d, t, p, m, schedule, z, r, cp, ep};
                  ++out.counts.candidates;
                  const double bound = StaticLowerBound(whole, c);
                  out.counts.least_static_bytes = std::min(out.counts.least_static_bytes, bound);
                  SweepPoint point;
                  if (bound > device->memory_bytes) {
                    ++out.counts.pruned_by_memory;
                    char why[200];
                    std::snprintf(why, sizeof why,
                                  "dropped by the memory bound: parameters, gradients and optimizer "
                                  "state alone need at least %.2f GiB per device, the device has "
                                  "%.2f GiB",
                                  bound / kGiB, device->memory_bytes / kGiB);
                    point.infeasible = why;
                  }
                  point.scenario = CandidateScenario(base, out.global_batch, c);
                  std::vector<std::string> values = {std::to_string(n),
                                                std::to_string(d),
                                                std::to_string(t),
                                                std::to_string(p),
                                                std::to_string(m),
                                                p > 1 ? config::PipelineScheduleName(schedule) : "none",
                                                std::to_string(z),
                                                RecomputeName(r)};
                  if (context_axis) values.push_back(std::to_string(cp));
                  if (experts > 0) values.push_back(std::to_string(ep));
                  point.name = base.name + "/";
                  for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
                    point.choice.push_back(ValueIndex(sweep.axes[a], values[a]));
                    point.name += (a > 0 ? "," : "") + sweep.axes[a].path + "=" + values[a];
                  }
                  sweep.points.push_back(std::move(point));
                }
              }
            }
          }
        }
      }
     }
    }
  }
  if (out.counts.candidates == 0)
    throw UserError("dtsim search: no plan divides the global batch of " +
                        std::to_string(out.global_batch) + " over these device counts",
                    "give a global batch (parallelism.global_batch) with more divisors");
  return out;
}

std::string WhatWouldFit(const config::Scenario& base, const models::ModelGraph& graph,
                         const SearchSpace& space, const Search& search,
                         const std::vector<PointResult>& results) {
  if (!RankSearch(results).empty()) return "";
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(base);
  const hw::DeviceSpec* device = catalog.FindDevice(base.cluster.device);
  DTSIM_CHECK(device != nullptr, "WhatWouldFit: the search's device");
  std::string text;
  char line[400];
  // The simulated plan that needs the least memory.
  std::size_t least = results.size();
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].memory_per_device_bytes > 0 &&
        (least == results.size() ||
         results[i].memory_per_device_bytes < results[least].memory_per_device_bytes))
      least = i;
  if (least < results.size()) {
    std::snprintf(line, sizeof line,
                  "the plan needing the least memory (%s) needs %.2f GiB per device, the device "
                  "has %.2f GiB",
                  search.sweep.points[least].name.c_str(),
                  results[least].memory_per_device_bytes / kGiB, device->memory_bytes / kGiB);
  } else {
    std::snprintf(line, sizeof line,
                  "every plan's parameters, gradients and optimizer state alone need at least "
                  "%.2f GiB per device, the device has %.2f GiB",
                  search.counts.least_static_bytes / kGiB, device->memory_bytes / kGiB);
  }
  text = line;
  int largest = 0;
  for (const SweepPoint& p : search.sweep.points)
    largest = std::max(largest, p.scenario.cluster.num_devices());
  if (largest == 0) return text;
  const int per_node = base.cluster.devices_per_node;
  for (std::int64_t n = 2LL * largest; n <= (std::int64_t{largest} << 16) && n <= INT32_MAX / 2;
       n *= 2) {
    if (n > per_node && n % per_node != 0) continue;
    SearchSpace more = space;
    more.devices = {static_cast<int>(n)};
    Search bigger;
    try {
      bigger = BuildSearch(base, graph, more);
    } catch (const UserError&) {
      continue;  // no plan divides the global batch over n devices
    }
    if (bigger.counts.candidates > bigger.counts.pruned_by_memory) {
      std::snprintf(line, sizeof line,
                    "; the memory bound admits plans from %lld devices on (a lower bound: "
                    "activations not counted; try --devices %lld)",
                    static_cast<long long>(n), static_cast<long long>(n));
      return text + line;
    }
  }
  return text;
}

std::string BreakdownProblem(const PointResult& r) {
  if (!r.feasible) return "";
  const double tolerance = 1e-6 * r.step_time_s;
  const double sum = r.compute_s + r.exposed_comm_s + r.idle_s;
  char text[240];
  if (r.idle_s < -tolerance) {
    std::snprintf(text, sizeof text, "negative idle time (%.6g s of a %.6g s step)", r.idle_s,
                  r.step_time_s);
    return text;
  }
  if (std::abs(sum - r.step_time_s) > tolerance) {
    std::snprintf(text, sizeof text,
                  "compute %.6g s + exposed communication %.6g s + idle %.6g s = %.6g s, not the "
                  "step's %.6g s",
                  r.compute_s, r.exposed_comm_s, r.idle_s, sum, r.step_time_s);
    return text;
  }
  return "";
}

std::size_t RecheckSearch(const Search& search, std::vector<PointResult>* results, std::size_t top,
                          SweepRunOptions options) {
  DTSIM_CHECK(results->size() == search.sweep.points.size(), "RecheckSearch: one result per point");
  options.shard = 0;
  options.shards = 1;
  options.fast = false;
  std::size_t resimulated = 0;
  for (;;) {
    // Extrapolated rows whose breakdown does not add up are simulated in
    // full; full simulations that do not add up are refused.
    options.only.clear();
    for (std::size_t i = 0; i < results->size(); ++i) {
      PointResult& r = (*results)[i];
      const std::string why = BreakdownProblem(r);
      if (why.empty()) continue;
      if (r.extrapolated) {
        options.only.push_back(i);
      } else {
        r.feasible = false;
        r.infeasible = "not ranked: the simulated breakdown does not add up: " + why;
      }
    }
    const std::vector<std::size_t> ranked = RankSearch(*results);
    std::vector<std::size_t> rows(ranked.begin(),
                                  ranked.begin() + static_cast<std::ptrdiff_t>(
                                                       std::min(top, ranked.size())));
    for (const std::size_t i : ParetoFront(*results)) rows.push_back(i);
    for (const std::size_t i : rows)
      if ((*results)[i].extrapolated &&
          std::find(options.only.begin(), options.only.end(), i) == options.only.end())
        options.only.push_back(i);
    if (options.only.empty()) return resimulated;
    std::vector<PointResult> full = RunSweep(search.sweep, options);
    for (const std::size_t i : options.only) (*results)[i] = std::move(full[i]);
    resimulated += options.only.size();
  }
}

std::vector<std::size_t> RankSearch(const std::vector<PointResult>& results) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].feasible && results[i].throughput_samples_per_s > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PointResult &x = results[a], &y = results[b];
    if (x.throughput_samples_per_s != y.throughput_samples_per_s)
      return x.throughput_samples_per_s > y.throughput_samples_per_s;
    if (x.devices != y.devices) return x.devices < y.devices;
    return x.memory_per_device_bytes < y.memory_per_device_bytes;
  });
  return order;
}

std::vector<std::size_t> ParetoFront(const std::vector<PointResult>& results) {
  std::vector<std::size_t> best;  // fastest per device count, by device count
  for (const std::size_t i : RankSearch(results)) {
    const auto same = std::find_if(best.begin(), best.end(), [&](std::size_t j) {
      return results[j].devices == results[i].devices;
    });
    if (same == best.end()) best.push_back(i);  // ranked: the first is the fastest
  }
  std::sort(best.begin(), best.end(), [&](std::size_t a, std::size_t b) {
    return results[a].devices < results[b].devices;
  });
  std::vector<std::size_t> front;
  double fastest = 0;
  for (const std::size_t i : best) {
    if (results[i].throughput_samples_per_s <= fastest) continue;
    fastest = results[i].throughput_samples_per_s;
    front.push_back(i);
  }
  return front;
}

}  // namespace dtsim::study

#include "sim/cost/host_costs.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"
#include "plan/compute_tasks.h"
#include "sim/cost/collectives.h"
#include "sim/cost/op_kernels.h"

namespace dtsim::sim {
namespace {

using plan::TaskKind;

// Parameter tensors of an op: weight, plus bias; norms hold a scale and a shift.
int ParamTensors(const models::Op& op) {
  if (!op.HasParams()) return 0;
  if (op.kind == models::OpKind::kLayerNorm || op.kind == models::OpKind::kBatchNorm) return 2;
  return op.attrs.bias ? 2 : 1;
}

struct HostTime {
  double total = 0;  // to issue every op of the task
  double first = 0;  // to issue its first op (the device can start after it)
};

// Host time to issue the ops [first, first + count) for a task of `kind`.
HostTime ComputeHostSeconds(const models::ModelGraph& graph, const plan::Task& t,
                            const config::FrameworkProfile& fw, hw::Precision precision) {
  HostTime h;
  for (std::int32_t k = 0; k < t.op_count; ++k) {
    const auto v = static_cast<models::OpId>(t.op + k);
    const models::Op& op = graph.op(v);
    if (plan::IsFreeOp(op) || IsFusedOp(graph, v, fw.fused)) continue;
    const int kernels = KernelsOf(graph, v, t.kind, precision);
    // One framework call per op and pass: the forward, and the backward's
    // autograd node (counted with the input gradient, or with the weight
    // gradient of an op that has none).
    const bool op_call = t.kind != TaskKind::kBackwardWeight || graph.ReadsOnlyGraphInputs(v);
    if (kernels == 0 && !op_call) continue;
    const double op_s = (op_call ? fw.per_op_s : 0) + kernels * fw.per_kernel_s;
    if (h.total == 0) h.first = op_s;
    h.total += op_s;
  }
  return h;
}

}  // namespace

bool IsFusedOp(const models::ModelGraph& graph, models::OpId v,
               const std::set<models::OpKind>& fused) {
  if (fused.empty() || !fused.contains(graph.op(v).kind)) return false;
  const auto ins = graph.inputs(v);
  return !ins.empty() && !plan::IsFreeOp(graph.op(ins.front()));
}

models::Op FusedOp(const models::Op& op) {
  models::Op f = op;
  const double in = op.input_shapes.empty()
                        ? 0
                        : static_cast<double>(models::NumElements(op.input_shapes.front()));
  f.read_elements_per_sample = std::max(0.0, op.read_elements_per_sample - 2 * in);
  return f;
}

namespace {
// Launches of `calls`: each call as many times as it repeats (a recurrent
// layer launches its per-step kernels once per step).
int Launches(const std::vector<KernelCall>& calls) {
  std::int64_t n = 0;
  for (const KernelCall& c : calls) n += c.repeat;
  return static_cast<int>(n);
}
}  // namespace

int KernelsOf(const models::ModelGraph& graph, models::OpId v, plan::TaskKind kind,
              hw::Precision precision) {
  const models::Op& op = graph.op(v);
  if (kind != TaskKind::kBackward) return Launches(OpKernels(op, kind, 1, precision));
  int n = 0;
  if (!graph.ReadsOnlyGraphInputs(v))
    n += Launches(OpKernels(op, TaskKind::kBackwardInput, 1, precision));
  if (op.HasParams()) n += Launches(OpKernels(op, TaskKind::kBackwardWeight, 1, precision));
  return n;
}

void AddHostCosts(const plan::Plan& plan, const models::ModelGraph& graph,
                  const config::FrameworkProfile& fw, const config::InputPipeline& input,
                  hw::Precision precision, TaskCosts* costs) {
  const std::size_t n = plan.num_tasks();
  const auto ranks = static_cast<std::size_t>(plan.num_ranks());
  auto is_worker = [&](plan::RankId r) { return !plan.IsServer(r); };
  auto holds_op = [&](plan::RankId r, std::int32_t op) {
    if (plan.ops_on_rank.empty()) return true;
    const auto& ops = plan.ops_on_rank[static_cast<std::size_t>(r)];
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  };

  // Horovod: each fused gradient all-reduce waits for the next cycle of the
  // background thread, half a cycle on average.
  if (fw.cycle_time_s > 0)
    for (std::size_t c = 0; c < plan.collectives().size(); ++c)
      if (!plan.collectives()[c].activations)
        costs->collective_ns[c] = AddSimTime(costs->collective_ns[c], SecondsToNs(fw.cycle_time_s / 2));

  if (fw.HasHostCosts() || fw.sync_each_step) {
    costs->host_ns.assign(n, 0);
    costs->host_lead_ns.assign(n, 0);
    costs->host_sync.assign(n, 0);
    // Parameter tensors and parameters per rank, for the optimizer loop.
    std::vector<double> tensors(ranks, 0), params(ranks, 0);
    for (plan::RankId r = 0; r < plan.num_ranks(); ++r) {
      const auto rr = static_cast<std::size_t>(r);
      if (!plan.ops_on_rank.empty()) {
        for (std::int32_t v : plan.ops_on_rank[rr]) {
          tensors[rr] += ParamTensors(graph.op(static_cast<models::OpId>(v)));
          params[rr] += static_cast<double>(graph.op(static_cast<models::OpId>(v)).params);
        }
      } else {
        for (models::OpId v = 0; v < graph.num_ops(); ++v) {
          tensors[rr] += ParamTensors(graph.op(v));
          params[rr] += static_cast<double>(graph.op(v).params);
        }
      }
    }
    std::vector<std::int32_t> seen(ranks, -1);      // last iteration whose first task was seen
    std::vector<std::int64_t> last_of(ranks, -1);   // last task of the current iteration
    std::map<std::tuple<std::int32_t, std::int32_t, TaskKind>, HostTime> op_cache;
    for (std::size_t i = 0; i < n; ++i) {
      const plan::Task& t = plan.tasks()[i];
      if (!is_worker(t.rank)) continue;
      const auto r = static_cast<std::size_t>(t.rank);
      double s = 0, lead = 0;  // host time of the task, and before the device may start it
      switch (t.kind) {
        case TaskKind::kForward:
        case TaskKind::kBackwardInput:
        case TaskKind::kBackwardWeight:
        case TaskKind::kBackward:
          if (!fw.cuda_graphs) {
            const auto key = std::make_tuple(t.op, t.op_count, t.kind);
            auto it = op_cache.find(key);
            if (it == op_cache.end())
              it = op_cache.emplace(key, ComputeHostSeconds(graph, t, fw, precision)).first;
            s = it->second.total;
            lead = it->second.first;
          }
          break;
        case TaskKind::kOptimizer:
          if (!fw.cuda_graphs && params[r] > 0) {
            const double share = std::max(1.0, std::round(tensors[r] * static_cast<double>(t.params) / params[r]));
            if (fw.optimizer_loop == config::OptimizerLoop::kPerTensor)
              s = share * (fw.per_op_s + fw.optimizer_kernels_per_tensor * fw.per_kernel_s);
            else
              s = std::ceil(share / fw.optimizer_tensors_per_launch) * (fw.per_op_s + fw.per_kernel_s);
            lead = std::min(s, fw.per_op_s + fw.per_kernel_s);
          }
          break;
        case TaskKind::kCollective:
        case TaskKind::kSend:
        case TaskKind::kRecv:
          if (!fw.cuda_graphs) s = fw.per_collective_s;
          if (t.kind == TaskKind::kSend && fw.sync_on_p2p) costs->host_sync[i] = 1;
          break;
      }
      double setup = 0;
      if (t.iteration > seen[r]) {  // the first task of an iteration
        seen[r] = t.iteration;
        if (fw.sync_each_step && last_of[r] >= 0) costs->host_sync[static_cast<std::size_t>(last_of[r])] = 1;
        setup = fw.per_step_s + (fw.cuda_graphs ? fw.graph_launch_s : 0);
        s += setup;
        lead += setup;
      }
      last_of[r] = static_cast<std::int64_t>(i);
      costs->host_ns[i] = SecondsToNs(s);
      costs->host_lead_ns[i] = SecondsToNs(lead);
      // A parameter server's reply (the pulled parameters) is received on
      // the worker's host before the work that needs it is issued (a Recv
      // op of TensorFlow's graph, a blocking RPC in PyTorch): the host
      // spends the step's setup, then waits for it.
      for (const plan::TaskId d : plan.deps(static_cast<plan::TaskId>(i))) {
        if (!plan.IsServer(plan.tasks()[static_cast<std::size_t>(d)].rank)) continue;
        if (costs->host_await.empty()) {
          costs->host_await.assign(n, 0);
          costs->host_await_setup_ns.assign(n, 0);
        }
        costs->host_await[i] = 1;
        costs->host_await_setup_ns[i] = SecondsToNs(setup);
        break;
      }
    }
    if (fw.sync_each_step)
      for (std::size_t r = 0; r < ranks; ++r)
        if (last_of[r] >= 0) costs->host_sync[static_cast<std::size_t>(last_of[r])] = 1;
  }

  if (input.Costs()) {
    // Input ranks per node and the samples each takes per iteration (its
    // forward tasks of the model's first op, iteration 0).
    std::vector<double> samples(ranks, 0);
    std::int32_t first_op = -1;
    for (const plan::Task& t : plan.tasks())
      if (t.kind == TaskKind::kForward && (first_op < 0 || t.op < first_op)) first_op = t.op;
    for (const plan::Task& t : plan.tasks())
      if (t.kind == TaskKind::kForward && t.iteration == 0 && is_worker(t.rank) &&
          t.op <= first_op && t.op + t.op_count > first_op && holds_op(t.rank, first_op))
        samples[static_cast<std::size_t>(t.rank)] += t.batch;
    std::map<std::int32_t, int> readers;  // per node
    for (plan::RankId r = 0; r < plan.num_ranks(); ++r)
      if (samples[static_cast<std::size_t>(r)] > 0) ++readers[plan.ranks[static_cast<std::size_t>(r)].node];
    costs->input_ns.assign(ranks, 0);
    costs->input_prefetch = input.prefetch;
    for (plan::RankId r = 0; r < plan.num_ranks(); ++r) {
      const auto rr = static_cast<std::size_t>(r);
      if (samples[rr] <= 0) continue;
      const double cores_each =
          static_cast<double>(input.cores) / readers[plan.ranks[rr].node];
      costs->input_ns[rr] = SecondsToNs(samples[rr] * input.per_sample_s / cores_each);
    }
  }
}

void ShareHostCpuWithInput(const plan::Plan& plan, const Network& network, TaskCosts* costs) {
  if (costs->input_ns.empty() || plan.iterations < 1) return;
  std::map<int, double> busy;  // node -> summing seconds over the whole plan
  for (const plan::Collective& c : plan.collectives()) {
    if (!c.via_host) continue;
    const auto& members = plan.groups()[static_cast<std::size_t>(c.group)];
    const std::vector<int> ranks(members.begin(), members.end());
    for (const auto& [node, s] : HostSumSecondsPerNode(network, ranks, c.bytes, c.op)) busy[node] += s;
  }
  if (busy.empty()) return;
  for (plan::RankId r = 0; r < plan.num_ranks(); ++r) {
    auto& ns = costs->input_ns[static_cast<std::size_t>(r)];
    if (ns == 0) continue;  // reads no input
    const auto it = busy.find(plan.ranks[static_cast<std::size_t>(r)].node);
    if (it != busy.end()) ns += SecondsToNs(it->second / plan.iterations);
  }
}

}  // namespace dtsim::sim

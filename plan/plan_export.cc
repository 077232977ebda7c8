#include "plan/plan_export.h"

#include <algorithm>
#include <array>
#include <sstream>

namespace dtsim::plan {
namespace {

std::string DeviceName(const Plan& plan, RankId r) {
  const RankPlacement& p = plan.ranks[static_cast<std::size_t>(r)];
  return "/node:" + std::to_string(p.node) + "/device:" + std::to_string(p.local);
}

// "/node:0/device:0, /node:0/device:1, ... (16 devices)" for the ranks holding an op.
std::string DeviceList(const Plan& plan, const std::vector<RankId>& holders, int max_ranks) {
  std::string s;
  const int shown = std::min<int>(static_cast<int>(holders.size()), max_ranks);
  for (int i = 0; i < shown; ++i) {
    if (i) s += ", ";
    s += DeviceName(plan, holders[static_cast<std::size_t>(i)]);
  }
  if (static_cast<int>(holders.size()) > shown)
    s += ", ... (" + std::to_string(holders.size()) + " devices)";
  return s;
}

}  // namespace

std::string FormatPlacement(const Plan& plan, const models::ModelGraph& graph, int max_ranks) {
  std::ostringstream o;
  std::vector<std::vector<RankId>> holders(graph.num_ops());
  for (RankId r = 0; r < plan.num_ranks(); ++r)
    for (std::int32_t op : plan.ops_on_rank[static_cast<std::size_t>(r)])
      holders[static_cast<std::size_t>(op)].push_back(r);
  o << "plan: " << plan.model_name << ", strategy " << StrategyName(plan.strategy) << ", " << plan.num_ranks()
    << " ranks, global batch " << plan.samples_per_iteration << ", " << plan.iterations
    << " iteration(s), " << plan.num_tasks() << " tasks, " << plan.collectives().size()
    << " collectives\n";
  o << "op placement:\n";
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    const models::Op& op = graph.op(v);
    o << "  " << op.name << " (" << models::OpKindName(op.kind) << "): "
      << DeviceList(plan, holders[v], 4) << "\n";
  }
  // Task counts per rank and kind, indexed by TaskKind (every kind has a
  // slot: an array one short of the enum once mislabelled every count after
  // kBackward and wrote past its end for kRecv).
  constexpr std::size_t kKinds = static_cast<std::size_t>(TaskKind::kRecv) + 1;
  std::vector<std::array<int, kKinds>> counts(static_cast<std::size_t>(plan.num_ranks()));
  for (auto& c : counts) c.fill(0);
  for (const Task& t : plan.tasks())
    ++counts[static_cast<std::size_t>(t.rank)].at(static_cast<std::size_t>(t.kind));
  auto count = [&](RankId r, TaskKind k) {
    return counts[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)];
  };
  o << "tasks per rank:\n";
  for (RankId r = 0; r < plan.num_ranks(); ++r) {
    if (r == max_ranks) {
      o << "  ... " << (plan.num_ranks() - max_ranks) << " more ranks\n";
      break;
    }
    o << "  rank " << r << " " << DeviceName(plan, r) << ": " << count(r, TaskKind::kForward)
      << " forward, " << count(r, TaskKind::kBackward) << " backward, "
      << count(r, TaskKind::kBackwardInput) << " backward-input, "
      << count(r, TaskKind::kBackwardWeight) << " backward-weight, "
      << count(r, TaskKind::kOptimizer) << " optimizer, " << count(r, TaskKind::kCollective)
      << " collective, " << count(r, TaskKind::kSend) + count(r, TaskKind::kRecv)
      << " send/recv\n";
  }
  return o.str();
}

void WriteDot(std::ostream& out, const Plan& plan, const models::ModelGraph& graph) {
  // Colour classes: the first rank holding each op identifies its group.
  std::vector<RankId> holder(graph.num_ops(), -1);
  for (RankId r = plan.num_ranks(); r-- > 0;)
    for (std::int32_t op : plan.ops_on_rank[static_cast<std::size_t>(r)])
      holder[static_cast<std::size_t>(op)] = r;
  std::vector<RankId> classes;
  for (RankId h : holder)
    if (std::find(classes.begin(), classes.end(), h) == classes.end()) classes.push_back(h);
  static const char* const kColours[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                         "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd",
                                         "#ccebc5", "#ffed6f"};
  const auto colour = [&](RankId h) {
    const auto i = static_cast<std::size_t>(std::find(classes.begin(), classes.end(), h) - classes.begin());
    return kColours[i % (sizeof kColours / sizeof kColours[0])];
  };
  out << "digraph \"" << graph.name() << "\" {\n  rankdir=TB;\n  node [shape=box, style=filled, "
      << "fontname=\"Helvetica\", fontsize=10];\n";
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    const models::Op& op = graph.op(v);
    out << "  op" << v << " [label=\"" << op.name << "\\n" << models::OpKindName(op.kind) << " "
        << models::ShapeToString(op.output_shape) << "\", fillcolor=\"" << colour(holder[v])
        << "\"];\n";
  }
  for (models::OpId v = 0; v < graph.num_ops(); ++v)
    for (models::OpId in : graph.inputs(v)) out << "  op" << in << " -> op" << v << ";\n";
  out << "  subgraph cluster_legend {\n    label=\"devices\";\n";
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const RankId h = classes[i];
    out << "    legend" << i << " [label=\"" << (h < 0 ? "no device" : "from " + DeviceName(plan, h))
        << "\", fillcolor=\"" << colour(h) << "\"];\n";
  }
  out << "  }\n}\n";
}

void WritePlanJson(std::ostream& out, const Plan& plan, const models::ModelGraph& graph) {
  nlohmann::ordered_json head;
  head["model"] = plan.model_name;
  head["strategy"] = StrategyName(plan.strategy);
  head["iterations"] = plan.iterations;
  head["samples_per_iteration"] = plan.samples_per_iteration;
  head["batch_per_rank"] = plan.batch_per_rank;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (RankId r = 0; r < plan.num_ranks(); ++r)
    ranks.push_back({{"rank", r}, {"node", plan.ranks[static_cast<std::size_t>(r)].node},
                     {"local", plan.ranks[static_cast<std::size_t>(r)].local}});
  head["ranks"] = ranks;
  head["groups"] = plan.groups();
  nlohmann::ordered_json colls = nlohmann::ordered_json::array();
  for (const Collective& c : plan.collectives())
    colls.push_back({{"op", CollectiveOpName(c.op)}, {"algorithm", CollectiveAlgorithmName(c.algorithm)},
                     {"bytes", c.bytes}, {"group", c.group}, {"iteration", c.iteration},
                     {"bucket", c.bucket}, {"shared_op", c.shared_op},
                     {"activations", c.activations}, {"tasks", c.tasks}});
  head["collectives"] = colls;
  std::string h = head.dump();
  h.pop_back();  // reopen the object to stream the tasks
  out << h << ",\"tasks\":[\n";
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const Task& t = plan.tasks()[i];
    nlohmann::ordered_json j;
    j["id"] = i;
    j["kind"] = TaskKindName(t.kind);
    j["rank"] = t.rank;
    j["stream"] = StreamKindName(t.stream);
    j["iteration"] = t.iteration;
    if (t.op >= 0) {
      j["op"] = graph.op(static_cast<models::OpId>(t.op)).name;
      j["batch"] = t.batch;
    }
    if (t.collective >= 0) j["collective"] = t.collective;
    if (t.kind == TaskKind::kOptimizer) j["params"] = t.params;
    auto deps = plan.deps(static_cast<TaskId>(i));
    j["deps"] = std::vector<TaskId>(deps.begin(), deps.end());
    out << (i ? ",\n" : "") << j.dump();
  }
  out << "\n]}\n";
}

namespace {

// "layer3.attn.ln" or, for fused tasks, "layer3.attn.ln .. layer3.attn.proj".
std::string OpRange(const models::ModelGraph& graph, const Task& t) {
  std::string s = graph.op(static_cast<models::OpId>(t.op)).name;
  if (t.op_count > 1) s += " .. " + graph.op(static_cast<models::OpId>(t.op + t.op_count - 1)).name;
  if (t.micro_batch > 0 || t.op_count > 1) s += " (mb " + std::to_string(t.micro_batch) + ")";
  return s;
}

}  // namespace

std::string TaskLabel(const Plan& plan, const models::ModelGraph& graph, const Task& t) {
  switch (t.kind) {
    case TaskKind::kForward: return "fwd " + OpRange(graph, t);
    case TaskKind::kBackwardInput:
      return "bwd_in " + graph.op(static_cast<models::OpId>(t.op)).name;
    case TaskKind::kBackwardWeight:
      return "bwd_w " + graph.op(static_cast<models::OpId>(t.op)).name;
    case TaskKind::kBackward: return "bwd " + OpRange(graph, t);
    case TaskKind::kOptimizer: return "optimizer";
    case TaskKind::kCollective: {
      const auto& c = plan.collectives()[static_cast<std::size_t>(t.collective)];
      // What it reduces: a tied weight shared by stages, tensor-parallel
      // activations, or a gradient bucket.
      if (c.shared_op >= 0)
        return std::string(CollectiveOpName(c.op)) + " shared " +
               graph.op(static_cast<models::OpId>(c.shared_op)).name;
      if (c.activations) return std::string(CollectiveOpName(c.op)) + " tensor-parallel";
      return std::string(CollectiveOpName(c.op)) + " bucket " + std::to_string(c.bucket);
    }
    case TaskKind::kSend: return "send to " + std::to_string(t.peer);
    case TaskKind::kRecv: return "recv from " + std::to_string(t.peer);
  }
  return "?";
}

}  // namespace dtsim::plan

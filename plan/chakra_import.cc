#include "plan/chakra_import.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "common/error.h"
#include "plan/chakra_decode.h"
#include "plan/chakra_et.pb.h"
#include "plan/chakra_process_groups.h"

namespace dtsim::plan {
namespace {

namespace cf = dtsim::chakra_format;

std::int64_t RequireInt(const RankTrace& t, const cf::Node& n, const std::string& name,
                        std::int64_t min) {
  const std::optional<std::int64_t> v = IntAttr(n, name);
  if (!v) ChakraFail(t.name, NodeText(n) + " has no integer attribute '" + name + "'");
  if (*v < min) {
    ChakraFail(t.name, NodeText(n) + ": " + name + " = " + std::to_string(*v) + " is below " +
                           std::to_string(min));
  }
  return *v;
}

std::optional<CollectiveOp> CollectiveOf(std::int64_t comm_type) {
  switch (comm_type) {
    case cf::ALL_REDUCE: return CollectiveOp::kAllReduce;
    case cf::ALL_GATHER: return CollectiveOp::kAllGather;
    case cf::REDUCE_SCATTER: return CollectiveOp::kReduceScatter;
    case cf::BROADCAST: return CollectiveOp::kBroadcast;
    case cf::REDUCE: return CollectiveOp::kReduce;
    case cf::ALL_TO_ALL: return CollectiveOp::kAllToAll;
    case cf::BARRIER: return CollectiveOp::kBarrier;
    default: return std::nullopt;
  }
}

class Builder {
 public:
  Builder(std::vector<RankTrace> traces, const ChakraImportOptions& options,
          ChakraImportReport* report)
      : traces_(std::move(traces)), options_(options), report_(report) {}

  Plan Build() {
    const auto ranks = static_cast<RankId>(traces_.size());
    const int per_node = std::max(1, options_.devices_per_node);
    for (RankId r = 0; r < ranks; ++r) plan_.ranks.push_back({r / per_node, r % per_node});
    std::vector<RankId> all(static_cast<std::size_t>(ranks));
    for (RankId r = 0; r < ranks; ++r) all[static_cast<std::size_t>(r)] = r;
    group_ = plan_.AddGroup(all);
    ReadProcessGroups();
    plan_.strategy = Strategy::kChakra;
    plan_.iterations = 1;
    plan_.samples_per_iteration = options_.samples_per_iteration;
    done_.resize(traces_.size());
    pos_.assign(traces_.size(), 0);
    arrival_.resize(traces_.size());
    index_.resize(traces_.size());
    for (std::size_t r = 0; r < traces_.size(); ++r) {
      done_[r].resize(traces_[r].nodes.size());
      for (std::size_t i = 0; i < traces_[r].nodes.size(); ++i) {
        index_[r][traces_[r].nodes[i].id()] = i;
      }
    }

    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t r = 0; r < traces_.size(); ++r) {
        while (pos_[r] < traces_[r].nodes.size() && Step(r)) progress = true;
      }
      if (TryCollective()) progress = true;
    }
    for (std::size_t r = 0; r < traces_.size(); ++r) {
      if (pos_[r] < traces_[r].nodes.size()) Stuck(r);
    }
    return std::move(plan_);
  }

 private:
  // The tasks node i of rank r stands for: its own, or for a node without
  // time of its own, those of its dependencies.
  std::vector<TaskId> DepTasks(std::size_t r, const cf::Node& n) const {
    std::set<TaskId> tasks;
    auto add = [&](std::uint64_t id) {
      const std::size_t i = index_[r].at(id);  // earlier in the order (Decode)
      tasks.insert(done_[r][i].begin(), done_[r][i].end());
    };
    for (std::uint64_t d : n.data_deps()) add(d);  // both lists (Decode)
    return {tasks.begin(), tasks.end()};
  }

  // Adds node pos_[r] of rank r; false when it must wait (a receive whose
  // send is not there yet, a collective not every rank has reached).
  bool Step(std::size_t r) {
    const RankTrace& t = traces_[r];
    const cf::Node& n = t.nodes[pos_[r]];
    const auto rank = static_cast<RankId>(r);
    std::vector<TaskId> deps = DepTasks(r, n);
    std::vector<TaskId>& mine = done_[r][pos_[r]];
    switch (n.type()) {
      case cf::METADATA_NODE:
      case cf::MEM_LOAD_NODE:
      case cf::MEM_STORE_NODE:
        mine = deps;
        break;
      case cf::COMP_NODE: {
        if (BoolAttr(n, "is_cpu_op").value_or(false)) {
          if (options_.cleanup.host_ops == ChakraHostOps::kDrop) {
            ++report_->host_ops_dropped;
            mine = deps;
            break;
          }
          if (options_.cleanup.host_ops == ChakraHostOps::kRefuse && n.duration_micros() > 0) {
            ChakraFail(
                t.name,
                NodeText(n) + " is a host operator (is_cpu_op) of " +
                    std::to_string(n.duration_micros()) +
                    " us, and dtsim simulates a rank's GPU stream only",
                "--host-ops drop gives host operators no time; --host-ops serialize runs them "
                "on the GPU's compute stream with its kernels (one after the other)");
          }
          ++report_->host_ops_serialized;
        }
        Task task;
        task.kind = TaskKind::kForward;
        task.stream = StreamKind::kCompute;
        task.rank = rank;
        task.seconds = static_cast<double>(n.duration_micros()) * 1e-6;
        if (n.duration_micros() == 0) {
          if (const std::optional<std::int64_t> flops = IntAttr(n, "num_ops");
              flops && *flops > 0) {
            if (options_.compute_flops_per_s <= 0) {
              ChakraFail(t.name, NodeText(n) + " has num_ops but no duration_micros",
                         "give durations, or a device to price FLOPs on");
            }
            task.seconds = static_cast<double>(*flops) / options_.compute_flops_per_s;
          }
        }
        ++report_->compute_nodes;
        report_->zero_duration_compute_nodes += task.seconds == 0;
        mine = {plan_.AddTask(task, deps)};
        break;
      }
      case cf::COMM_SEND_NODE: {
        const std::int64_t dst = RequireInt(t, n, "comm_dst", 0);
        if (dst >= static_cast<std::int64_t>(traces_.size()) || dst == rank) {
          ChakraFail(t.name, NodeText(n) + ": comm_dst " + std::to_string(dst) +
                                 " is not another rank of the " + std::to_string(traces_.size()));
        }
        Task task;
        task.kind = TaskKind::kSend;
        task.stream = StreamKind::kComm;
        task.rank = rank;
        task.peer = static_cast<RankId>(dst);
        task.bytes = static_cast<double>(RequireInt(t, n, "comm_size", 0));
        const TaskId id = plan_.AddTask(task, deps);
        sends_[{rank, task.peer}].push_back({id, IntAttr(n, "comm_tag")});
        mine = {id};
        break;
      }
      case cf::COMM_RECV_NODE: {
        const std::int64_t src = RequireInt(t, n, "comm_src", 0);
        if (src >= static_cast<std::int64_t>(traces_.size()) || src == rank) {
          ChakraFail(t.name, NodeText(n) + ": comm_src " + std::to_string(src) +
                                 " is not another rank of the " + std::to_string(traces_.size()));
        }
        const std::pair<RankId, RankId> key{static_cast<RankId>(src), rank};
        const std::size_t k = received_[key];
        const auto sent = sends_.find(key);
        if (sent == sends_.end() || sent->second.size() <= k) return false;
        const std::optional<std::int64_t> tag = IntAttr(n, "comm_tag");
        if (tag && sent->second[k].tag && *tag != *sent->second[k].tag) {
          ChakraFail(t.name, NodeText(n) + ": receive " + std::to_string(k) + " from rank " +
                                 std::to_string(src) + " has tag " + std::to_string(*tag) +
                                 ", the matching send tag " + std::to_string(*sent->second[k].tag));
        }
        ++received_[key];
        deps.push_back(sent->second[k].task);
        mine = deps;
        break;
      }
      case cf::COMM_COLL_NODE: {
        if (arrival_[r].waiting) return false;  // for the other members
        const std::int64_t type = RequireInt(t, n, "comm_type", 0);
        if (!CollectiveOf(type)) {
          ChakraFail(t.name, NodeText(n) + ": collective type " + std::to_string(type) +
                                 " is not supported (ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, "
                                 "ALL_TO_ALL, REDUCE_SCATTER and BARRIER are)");
        }
        RequireInt(t, n, "comm_size", 0);
        arrival_[r] = {true, GroupOf(r, n), std::move(deps)};
        return false;
      }
      default:
        ChakraFail(t.name, NodeText(n) + " has node type " + std::to_string(n.type()) +
                               ", which dtsim does not read");
    }
    ++pos_[r];
    return true;
  }

  // Adds every collective whose group's members have all reached it;
  // true when it added one.
  bool TryCollective() {
    bool added = false;
    for (std::size_t r = 0; r < traces_.size(); ++r) {
      if (arrival_[r].waiting && GroupReady(arrival_[r].group)) {
        AddGroupCollective(arrival_[r].group);
        added = true;
      }
    }
    return added;
  }

  bool GroupReady(std::int32_t group) const {
    for (RankId m : plan_.groups()[static_cast<std::size_t>(group)]) {
      const Arrival& a = arrival_[static_cast<std::size_t>(m)];
      if (!a.waiting || a.group != group) return false;
    }
    return true;
  }

  // The collective every member of `group` waits at. REQUIRES: GroupReady.
  void AddGroupCollective(std::int32_t group) {
    const auto& members = plan_.groups()[static_cast<std::size_t>(group)];
    const auto first_rank = static_cast<std::size_t>(members.front());
    const cf::Node& first = traces_[first_rank].nodes[pos_[first_rank]];
    const std::int64_t type = *IntAttr(first, "comm_type");
    const std::int64_t size = *IntAttr(first, "comm_size");
    std::vector<std::vector<TaskId>> deps;
    for (RankId m : members) {
      const auto r = static_cast<std::size_t>(m);
      const cf::Node& n = traces_[r].nodes[pos_[r]];
      if (*IntAttr(n, "comm_type") != type || *IntAttr(n, "comm_size") != size) {
        ChakraFail(traces_[r].name,
                   NodeText(n) + ": collective " + std::to_string(seen_[{m, group}]) +
                       " of this rank" + GroupText(group) + " (type " +
                       std::to_string(*IntAttr(n, "comm_type")) + ", " +
                       std::to_string(*IntAttr(n, "comm_size")) + " bytes) differs from rank " +
                       std::to_string(members.front()) + "'s (" + NodeText(first) + ", type " +
                       std::to_string(type) + ", " + std::to_string(size) + " bytes)",
                   "every member of a group lists the group's collectives in the same order");
      }
      deps.push_back(std::move(arrival_[r].deps));
    }
    Collective c;
    c.op = *CollectiveOf(type);
    c.algorithm = options_.algorithm;
    c.bytes = static_cast<double>(size);
    c.group = group;
    c.bucket = seen_[{members.front(), group}];
    const std::int32_t index = plan_.AddCollective(c, deps, 0);
    const auto& tasks = plan_.collectives()[static_cast<std::size_t>(index)].tasks;
    for (std::size_t k = 0; k < members.size(); ++k) {
      const auto r = static_cast<std::size_t>(members[k]);
      done_[r][pos_[r]] = {tasks[k]};
      ++pos_[r];
      ++seen_[{members[k], group}];
      arrival_[r] = {};
    }
  }

  // " on process group 'NAME'" for a named group, "" for all ranks.
  std::string GroupText(std::int32_t group) const {
    for (const auto& [name, g] : named_groups_) {
      if (g == group) return " on process group '" + name + "'";
    }
    return "";
  }

  // The plan group of collective node `n` of rank r: its pg_name's, or all
  // ranks without one.
  std::int32_t GroupOf(std::size_t r, const cf::Node& n) {
    const std::optional<std::string> pg = StringAttr(n, "pg_name");
    if (!pg) return group_;
    const auto it = named_groups_.find(*pg);
    if (it == named_groups_.end()) {
      ChakraFail(
          traces_[r].name, NodeText(n) + ": process group '" + *pg + "' has no list of members",
          "a METADATA_NODE '## process_group:init ##' (PyTorch records it when the "
          "execution-trace observer runs before the groups are made) or a communicator-group "
          "file (--comm-groups) lists each group's ranks");
    }
    const auto& members = plan_.groups()[static_cast<std::size_t>(it->second)];
    if (std::find(members.begin(), members.end(), static_cast<RankId>(r)) == members.end()) {
      ChakraFail(traces_[r].name, NodeText(n) + ": rank " + std::to_string(r) +
                                      " is not a member of process group '" + *pg + "'");
    }
    return it->second;
  }

  // Plan groups for the process groups of the options and of the traces'
  // metadata nodes; every definition of a group must give the same ranks.
  void ReadProcessGroups() {
    std::map<std::string, std::pair<std::vector<RankId>, std::string>> defined;  // -> where
    auto define = [&](const ChakraProcessGroups& groups, const std::string& where,
                      const std::string& file) {
      for (const auto& [name, ranks] : groups) {
        std::vector<RankId> members;
        for (int q : ranks) {
          if (q >= static_cast<int>(traces_.size())) {
            ChakraFail(file, where + ": process group '" + name + "' lists rank " +
                                 std::to_string(q) + ", and there are " +
                                 std::to_string(traces_.size()) + " ranks");
          }
          members.push_back(q);
        }
        if (members.empty()) members = plan_.groups()[static_cast<std::size_t>(group_)];
        std::sort(members.begin(), members.end());
        if (std::adjacent_find(members.begin(), members.end()) != members.end()) {
          ChakraFail(file, where + ": process group '" + name + "' lists a rank twice");
        }
        const auto [it, added] = defined.emplace(name, std::make_pair(members, where));
        if (!added && it->second.first != members) {
          ChakraFail(file, where + ": process group '" + name + "' has other ranks than " +
                               it->second.second + " gives it");
        }
      }
    };
    define(options_.process_groups, "the communicator groups", options_.process_groups_file);
    for (const RankTrace& t : traces_) {
      for (const cf::Node& n : t.nodes) {
        if (n.type() != cf::METADATA_NODE || !n.has_inputs()) continue;
        std::optional<ChakraProcessGroups> groups;
        try {
          groups = ParseProcessGroupMetadata(n.inputs().values());
        } catch (const std::invalid_argument& e) {
          ChakraFail(t.name, NodeText(n) + ": " + e.what());
        }
        if (groups) define(*groups, t.name + " " + NodeText(n), t.name);
      }
    }
    std::map<std::vector<RankId>, std::int32_t> index{{plan_.groups()[0], group_}};
    for (const auto& [name, def] : defined) {
      const auto [it, added] = index.emplace(def.first, 0);
      if (added) it->second = plan_.AddGroup(def.first);
      named_groups_[name] = it->second;
    }
  }

  [[noreturn]] void Stuck(std::size_t r) const {
    const cf::Node& n = traces_[r].nodes[pos_[r]];
    if (n.type() == cf::COMM_COLL_NODE) {
      const std::int32_t group = arrival_[r].group;
      std::string missing;
      for (RankId q : plan_.groups()[static_cast<std::size_t>(group)]) {
        const Arrival& a = arrival_[static_cast<std::size_t>(q)];
        if (!a.waiting || a.group != group)
          missing += (missing.empty() ? "" : ", ") + std::to_string(q);
      }
      const auto it = seen_.find({static_cast<RankId>(r), group});
      ChakraFail(traces_[r].name, NodeText(n) + " is collective " +
                                      std::to_string(it == seen_.end() ? 0 : it->second) +
                                      " of this rank" + GroupText(group) + ", which ranks " +
                                      missing + " never reach");
    }
    ChakraFail(traces_[r].name, NodeText(n) + " receives from rank " +
                                    std::to_string(IntAttr(n, "comm_src").value_or(-1)) +
                                    ", which never sends it (or sends it only after this rank's "
                                    "next collective)");
  }

  struct Sent {
    TaskId task;
    std::optional<std::int64_t> tag;
  };

  std::vector<RankTrace> traces_;
  ChakraImportOptions options_;
  ChakraImportReport* report_;
  Plan plan_;
  std::int32_t group_ = 0;
  std::vector<std::vector<std::vector<TaskId>>> done_;  // per rank, per node
  std::vector<std::unordered_map<std::uint64_t, std::size_t>> index_;  // node id -> position
  std::vector<std::size_t> pos_;
  // A rank at a collective, waiting for the other members of its group.
  struct Arrival {
    bool waiting = false;
    std::int32_t group = 0;
    std::vector<TaskId> deps;
  };
  std::vector<Arrival> arrival_;                             // per rank
  std::map<std::pair<RankId, std::int32_t>, std::int32_t> seen_;  // (rank, group) -> collectives
  std::map<std::string, std::int32_t> named_groups_;         // process group -> plan group
  std::map<std::pair<RankId, RankId>, std::vector<Sent>> sends_;
  std::map<std::pair<RankId, RankId>, std::size_t> received_;
};

}  // namespace

Plan ImportChakra(const std::vector<ChakraTrace>& traces, const ChakraImportOptions& options,
                  ChakraImportReport* report) {
  DTSIM_CHECK(!traces.empty(), "at least one trace");
  ChakraImportReport local;
  if (report == nullptr) report = &local;
  *report = {};
  std::vector<RankTrace> decoded;
  for (const ChakraTrace& t : traces)
    decoded.push_back(DecodeChakraTrace(t, options.cleanup, report));
  return Builder(std::move(decoded), options, report).Build();
}

}  // namespace dtsim::plan

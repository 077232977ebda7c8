#include "config/jobs_loader.h"

#include <set>
#include <string>

#include <yaml-cpp/yaml.h>

#include "common/units.h"

namespace dtsim::config {
namespace {

const std::vector<std::string> kJobKeys = {"name", "start", "nodes", "workload", "parallelism"};
// Top-level keys that describe one job: each job gives its own (workload,
// parallelism) or has none yet (stragglers, failures, link events).
const std::vector<std::string> kPerJobKeys = {"workload", "parallelism", "stragglers", "failures",
                                              "link_events"};
// Top-level keys each job's scenario shares (cluster is cut to the job).
const std::vector<std::string> kSharedKeys = {"seed", "engine", "simgrid", "outputs"};

// The job's nodes: a count (the first `count` nodes no earlier job took, in
// order) or a list of node indices. `taken` marks the nodes of earlier jobs
// and gets this job's.
std::vector<int> ReadNodes(const YamlValue& v, int cluster_nodes, std::vector<bool>* taken) {
  std::vector<int> nodes;
  if (v.IsSequence()) {
    for (const YamlValue& e : v.AsSequence()) {
      const int n = static_cast<int>(e.AsInt64(0, cluster_nodes - 1));
      if ((*taken)[static_cast<std::size_t>(n)])
        e.Fail("node " + std::to_string(n) + " is already another job's (or listed twice)",
               "jobs run on nodes of their own: give each job different nodes");
      (*taken)[static_cast<std::size_t>(n)] = true;
      nodes.push_back(n);
    }
    if (nodes.empty()) v.Fail("expected at least one node", "a node count or a list of node indices");
    return nodes;
  }
  const int count = static_cast<int>(v.AsInt64(1, cluster_nodes));
  for (int n = 0; n < cluster_nodes && static_cast<int>(nodes.size()) < count; ++n) {
    if ((*taken)[static_cast<std::size_t>(n)]) continue;
    (*taken)[static_cast<std::size_t>(n)] = true;
    nodes.push_back(n);
  }
  if (static_cast<int>(nodes.size()) < count)
    v.Fail("expected at most the " + std::to_string(nodes.size()) +
               " node(s) earlier jobs left free of the cluster's " + std::to_string(cluster_nodes) +
               ", got " + std::to_string(count),
           "give fewer nodes, or more to cluster.nodes");
  return nodes;
}

// The scenario document of one job: the shared keys as they are, the
// cluster with `nodes` set to the job's count, the job's workload and
// parallelism. The values keep their positions in the file.
YAML::Node JobDocument(const YamlMap& root, const YamlMap& job, const YamlValue& nodes_value,
                       int node_count) {
  YAML::Node doc(YAML::NodeType::Map);
  for (const std::string& key : kSharedKeys)
    if (auto x = root.Get(key)) doc[key] = x->node();
  YAML::Node cluster(YAML::NodeType::Map);
  if (auto c = root.Get("cluster")) {
    if (c->IsMap())
      for (const auto& kv : c->node())
        if (kv.first.as<std::string>() != "nodes") cluster[kv.first.as<std::string>()] = kv.second;
  }
  // A count keeps its position; a list becomes its length.
  cluster["nodes"] = nodes_value.IsScalar() ? nodes_value.node() : YAML::Node(node_count);
  doc["cluster"] = cluster;
  for (const char* key : {"workload", "parallelism"})
    if (auto x = job.Get(key)) doc[key] = x->node();
  return doc;
}

}  // namespace

std::vector<Job> ReadJobs(const YamlValue& jobs, const YamlMap& root, const Scenario& shared,
                          bool check_plan_shape) {
  for (const std::string& key : kPerJobKeys)
    if (auto x = root.Get(key))
      x->Fail("with jobs, each job gives its own workload and parallelism (and none has " +
                  std::string(key == "workload" || key == "parallelism" ? "a top-level one"
                                                                        : key + " yet") + ")",
              "move it into each job under jobs:, or remove it");
  if (shared.engine != "simgrid") {
    const YamlValue at = root.Get("engine").value_or(jobs);
    at.Fail("jobs sharing a fabric are simulated by engine: simgrid only (the analytic engine "
            "prices each collective alone, so the jobs' flows would not share the links), got "
            "engine '" + shared.engine + "'",
            "set engine: simgrid");
  }
  if (!shared.cluster.node_groups.empty())
    jobs.Fail("jobs on a cluster of node groups are not simulated yet: each job is cut from "
              "cluster.nodes of one kind",
              "give the cluster nodes, devices_per_node and device instead of node_groups");
  const std::vector<YamlValue> list = jobs.AsSequence();
  if (list.empty()) jobs.Fail("expected at least one job", "see docs/scenario.md, \"Several jobs\"");
  std::vector<Job> out;
  std::set<std::string> names;
  std::vector<bool> taken(static_cast<std::size_t>(shared.cluster.nodes), false);
  for (const YamlValue& item : list) {
    const YamlMap m = item.AsMap(kJobKeys);
    Job job;
    job.where = item.where();
    const YamlValue name = m.Require("name", "the job's name");
    job.name = name.AsString();
    if (!names.insert(job.name).second)
      name.Fail("job '" + job.name + "' is named twice", "give each job its own name");
    if (auto x = m.Get("start")) job.start_s = x->AsQuantity(Dimension::kTime);
    if (job.start_s < 0) m.Require("start").Fail("expected a start >= 0 s");
    const YamlValue nodes = m.Require("nodes", "a node count or a list of node indices");
    job.nodes = ReadNodes(nodes, shared.cluster.nodes, &taken);
    m.Require("workload", "the job's workload (as a scenario's)");
    job.scenario = ParseScenarioNode(
        JobDocument(root, m, nodes, static_cast<int>(job.nodes.size())), shared.source_path,
        nullptr, check_plan_shape);
    job.scenario.name = job.name;
    job.scenario.outputs = shared.outputs;
    if (UsesServers(job.scenario))
      m.Require("parallelism")
          .Fail("jobs sharing a fabric run workers only: parameter servers are not simulated "
                "with jobs yet",
                "use strategy data, local_sgd with averaging all_reduce, hybrid or model");
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace dtsim::config

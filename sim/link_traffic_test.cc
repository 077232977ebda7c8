// Per-link traffic (sim/link_traffic.h) against a hand calculation, on both
// engines, and the timeline's link counters read back from trace.json.
#include "sim/link_traffic.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "config/scenario.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

// mnist-mlp data parallelism on 2 nodes of one V100 each over 25 GbE, one
// all-reduce of the whole gradient per step (one bucket), 3 iterations.
config::Scenario TwoNodes(const std::string& engine) {
  config::Scenario s = config::ParseScenario(
      "cluster: {nodes: 2, devices_per_node: 1, device: V100-SXM2-32GB, intra_node_link: nvlink2,"
      " network: {link: 25GbE}}\n"
      "workload: {model: mnist-mlp, batch_per_device: 64, iterations: 3}\n"
      "parallelism: {strategy: data, bucket_size: 1GiB}\n"
      "outputs: {link_traffic: 4}\n",
      "test.yaml");
  s.engine = engine;
  return s;
}

// A ring all-reduce of G bytes over N = 2 ranks sends 2 (N - 1) / N x G = G
// bytes from each rank, over its node's NIC up and the other's NIC down:
// each of the 4 NIC links carries G per step; no device port is crossed
// (one device per node). G = the model's parameters x 4 bytes (fp32).
TEST(LinkTraffic, ARingAllReduceLoadsEachNicWithTheGradient) {
  for (const char* engine : {"analytic", "simgrid"}) {
    const Prediction p = Simulate(TwoNodes(engine));
    const double g = static_cast<double>(p.model_totals.params) * 4;
    const LinkTraffic x = ComputeLinkTraffic(p, 4);
    EXPECT_EQ(x.measured_iterations, 2) << engine;  // iterations after the first
    ASSERT_EQ(x.classes.size(), 1u) << engine;
    const LinkClassLoad& nic = x.classes[0];
    EXPECT_EQ(nic.link_class, "nic");
    EXPECT_EQ(nic.links, 4);
    EXPECT_EQ(nic.busy_links, 4);
    EXPECT_NEAR(nic.bytes_per_step, 4 * g, 1e-9 * g) << engine;
    ASSERT_EQ(x.busiest.size(), 4u);
    for (const LinkLoad& l : x.busiest) {
      EXPECT_NEAR(l.bytes_per_step, g, 1e-9 * g) << engine << " " << l.name;
      // Utilisation: G / (bandwidth x step time).
      EXPECT_NEAR(l.utilisation, g / (l.bandwidth_bytes_per_s * p.metrics.step_time_s), 1e-12)
          << engine;
      EXPECT_GT(l.utilisation, 0);
      EXPECT_LT(l.utilisation, 1);
    }
  }
}

// The timeline's counters parse as JSON, sit on a "network links" process
// after the ranks', and each link's rate integrates over time to its
// bytes of the measured iterations (1e-6: rates rounded to the ns of the
// timeline's edges).
TEST(LinkTraffic, TraceCountersLoadAndIntegrateToTheLinksBytes) {
  const Prediction p = Simulate(TwoNodes("analytic"));
  std::ostringstream out;
  WriteChromeTrace(out, p, 16, 4);
  const nlohmann::json trace = nlohmann::json::parse(out.str());
  const LinkTraffic x = ComputeLinkTraffic(p, 4);
  const int pid = p.plan.num_ranks();  // ranks 0 and 1, then the links
  bool named = false;
  std::map<std::string, std::vector<std::pair<double, double>>> series;  // link -> (us, GB/s)
  for (const auto& e : trace["traceEvents"]) {
    if (e["pid"] != pid) continue;
    if (e["ph"] == "M" && e["name"] == "process_name") named = e["args"]["name"] == "network links";
    if (e["ph"] == "C") series[e["name"]].push_back({e["ts"], e["args"]["GB/s"]});
  }
  EXPECT_TRUE(named);
  ASSERT_EQ(series.size(), x.busiest.size());
  for (const LinkLoad& l : x.busiest) {
    const auto& s = series.at(l.name);
    ASSERT_GE(s.size(), 2u);
    EXPECT_EQ(s.back().second, 0);  // ends idle
    double bytes = 0;
    for (std::size_t i = 0; i + 1 < s.size(); ++i)
      bytes += s[i].second * 1e9 * (s[i + 1].first - s[i].first) * 1e-6;
    EXPECT_NEAR(bytes, l.bytes_per_step * x.measured_iterations, 1e-6 * bytes) << l.name;
  }
}

// Without outputs.link_traffic the report has no link_traffic object (the
// outputs of existing scenarios stay as they were); with it, its classes.
TEST(LinkTraffic, ReportOnlyWhenAskedFor) {
  config::Scenario s = TwoNodes("analytic");
  const Prediction p = Simulate(s);
  EXPECT_EQ(ReportJson(s, p)["link_traffic"]["classes"][0]["class"], "nic");
  EXPECT_NE(StepLog(s, p).find("link traffic nic"), std::string::npos);
  s.outputs.link_traffic = 0;
  EXPECT_FALSE(ReportJson(s, p).contains("link_traffic"));
  EXPECT_EQ(StepLog(s, p).find("link traffic"), std::string::npos);
}

}  // namespace
}  // namespace dtsim::sim

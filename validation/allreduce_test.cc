#include "validation/allreduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "validation/allreduce_report.h"

namespace dtsim::validation {
namespace {

constexpr const char* kHeader = "gpu,floats,ranks,nodes,mean_ms,gbytes_per_s,algorithm,std_ms\n";

std::string ErrorOf(const std::string& text) {
  try {
    ParseAllreduce(text, "allreduce.csv");
  } catch (const UserError& e) {
    return e.where().ToString() + " " + e.message();
  }
  return "";
}

TEST(ParseAllreduce, ReadsRowsByHeaderName) {
  const auto rows = ParseAllreduce(std::string(kHeader) +
                                       "M40,100000,2,,0.1097827,7.28,NCCL 2.0 MPI,0.002\n"
                                       "M40,100000,16,2,0.46,13.8,Baidu RingAllReduce,0.004\n",
                                   "allreduce.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].Where(), "allreduce.csv:2");
  EXPECT_EQ(rows[0].nodes, 1);
  EXPECT_DOUBLE_EQ(rows[0].measured_s, 0.1097827e-3);
  EXPECT_DOUBLE_EQ(rows[0].bytes(), 400000);
  EXPECT_EQ(rows[1].nodes, 2);
  EXPECT_EQ(rows[1].algorithm, AllreduceAlgorithm::kBaiduRing);
}

TEST(ParseAllreduce, ReportsMistakesAtFileAndLine) {
  const std::string h = kHeader;
  EXPECT_EQ(ErrorOf("gpu,floats\nM40,1\n"), "allreduce.csv:1 the header has no column 'ranks'");
  EXPECT_NE(ErrorOf(h + "M40,1,2,,0.1,1,NCCL 2.0 MPI\n").find("allreduce.csv:2 expected 8 fields"),
            std::string::npos);
  EXPECT_NE(ErrorOf(h + "M40,1,2,,x,1,NCCL 2.0 MPI,0\n").find("allreduce.csv:2 column 'mean_ms'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(h + "M40,1,2,,1,1,NCCL 2.0 MPI,0\nM40,1,2,,1,1,Horovod,0\n")
                .find("allreduce.csv:3 unknown algorithm 'Horovod'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(h + "M40,1,6,4,1,1,NCCL 2.0 MPI,0\n").find("6 ranks do not divide into 4"),
            std::string::npos);
  EXPECT_NE(ErrorOf(h + "V100,1,2,,1,1,NCCL 2.0 MPI,0\n").find("allreduce.csv:2 no all-reduce machine"),
            std::string::npos);
  EXPECT_NE(ErrorOf(h + "M40,1,16,,1,1,NCCL 2.0 MPI,0\n").find("16 GPUs per node"),
            std::string::npos);
  EXPECT_NE(ErrorOf(h + "M40,1.5,2,,1,1,NCCL 2.0 MPI,0\n").find("'floats'"), std::string::npos);
  EXPECT_THROW(LoadAllreduce("no/such/folder"), UserError);
}

AllreduceMeasurement Row(const std::string& gpu, double floats, int ranks, int nodes,
                         AllreduceAlgorithm a) {
  AllreduceMeasurement m;
  m.gpu = gpu;
  m.floats = static_cast<long long>(floats);
  m.ranks = ranks;
  m.nodes = nodes;
  m.algorithm = a;
  m.measured_s = 1;
  return m;
}

// The default constants: x16 link 15.754 GB/s x 0.8 = 12.603 GB/s; FDR
// 6.818 GB/s x 0.8 = 5.4545 GB/s.
const double kLink = 8e9 * 128 / 130 / 8 * 16 * 0.8;
const double kFdr = 4 * 14.0625e9 * 64 / 66 / 8 * 0.8;

TEST(PredictAllreduce, TwoStagedGpusShareTheirSwitchUplink) {
  // M40 copies through host memory: both directions of the 2-GPU ring
  // cross switch 0's uplink, 2 streams. 1e8 floats = 4e8 B; 2 steps of
  // 2e8 B at 12.603 / 2 GB/s, plus launch 20 us and 2 steps x 3 us.
  const AllreduceConstants c;
  const AllreducePrediction p =
      PredictAllreduce(Row("M40", 1e8, 2, 1, AllreduceAlgorithm::kNcclMpi), c);
  EXPECT_NEAR(p.seconds, 20e-6 + 2 * 3e-6 + 2 * 2e8 * 2 / kLink, 1e-12);
  // Peer to peer (1080Ti) the switch turns the copies: one stream per link.
  EXPECT_NEAR(PredictAllreduce(Row("1080Ti", 1e8, 2, 1, AllreduceAlgorithm::kNcclMpi), c).seconds,
              20e-6 + 2 * 3e-6 + 2 * 2e8 / kLink, 1e-12);
  // With every sheet forced peer to peer, the M40 prices as the 1080Ti.
  EXPECT_NEAR(PredictAllreduce(Row("M40", 1e8, 2, 1, AllreduceAlgorithm::kNcclMpi), c,
                               {false, true}).seconds,
              20e-6 + 2 * 3e-6 + 2 * 2e8 / kLink, 1e-12);
}

TEST(PredictAllreduce, BaiduRingPaysItsStepCostOnEveryStep) {
  // TitanX_Pascal, 16 ranks on 2 nodes, peer to peer: the network (5.4545
  // GB/s, 1 stream) is busier than switch 3's uplink (2 streams on 12.603
  // GB/s). 30 steps of 1e8 x 4 / 16 B, plus 30 x 0.5 ms.
  const AllreduceConstants c;
  const AllreducePrediction p =
      PredictAllreduce(Row("TitanX_Pascal", 1e8, 16, 2, AllreduceAlgorithm::kBaiduRing), c);
  EXPECT_NEAR(p.seconds, 30 * 0.5e-3 + 30 * 4e8 / 16 / kFdr, 1e-9);
  EXPECT_NE(p.bottleneck.find("network"), std::string::npos) << p.bottleneck;
}

TEST(PredictAllreduce, OsuFollowsOpenMpiTunedDecision) {
  const AllreduceConstants c;
  // 1000 floats = 4000 B < 10000 B: recursive doubling, log2(32) = 5 rounds
  // of 10 us + 4000 B on the busiest link (staged M40, 4 nodes: switch 3's
  // uplink, 3 streams on 12.603 GB/s).
  const AllreducePrediction small =
      PredictAllreduce(Row("M40", 1000, 32, 4, AllreduceAlgorithm::kOsu), c);
  EXPECT_EQ(small.how, "recursive doubling");
  EXPECT_NEAR(small.seconds, 5 * (10e-6 + 4000 * 3 / kLink), 1e-12);
  // 1e5 floats = 400 kB over 32 ranks: the ring, 62 steps, no launch cost.
  const AllreducePrediction ring =
      PredictAllreduce(Row("M40", 1e5, 32, 4, AllreduceAlgorithm::kOsu), c);
  EXPECT_EQ(ring.how, "ring");
  EXPECT_NEAR(ring.seconds, 62 * (10e-6 + 4e5 / 32 * 3 / kLink), 1e-12);
}

TEST(PredictAllreduce, NcclProtocolsPickTheFastest) {
  // 400 kB on 2 peer-to-peer GPUs: L = 2 x 3 us, W = 2 x 2e5 B / 12.603
  // GB/s = 31.7 us. LL: 6.6 us + L + 2 W (hop ratio 1) = 76.1 us; Simple:
  // 8.4 us + L x 3.4 / 0.6 + W = 74.1 us.
  const AllreduceConstants c;
  const AllreducePrediction p = PredictAllreduce(
      Row("1080Ti", 1e5, 2, 1, AllreduceAlgorithm::kNcclSingle), c, {true, false});
  const double w = 2 * 2e5 / kLink;
  EXPECT_EQ(p.how, "ring/Simple");
  EXPECT_NEAR(p.seconds, 8.4e-6 + 6e-6 * 3.4 / 0.6 + w, 1e-12);
}

// The committed report (results/allreduce) is what the command produces
// from the shared data, and docs/collectives_validation.md quotes it.
TEST(AllreduceResults, MatchTheCommittedReportAndDocs) {
  const std::string dir = "../shared/validation/deepbench";  // tests run from the repository root
  if (!std::filesystem::exists(dir + "/allreduce.csv")) GTEST_SKIP() << dir << " is not here";
  const AllreduceValidation v = ValidateAllreduce(LoadAllreduce(dir), 2);
  const nlohmann::json now = nlohmann::json::parse(AllreduceJson(v));
  std::ifstream in("results/allreduce/allreduce.json");
  ASSERT_TRUE(in) << "results/allreduce/allreduce.json is missing";
  const nlohmann::json committed = nlohmann::json::parse(in);
  ASSERT_EQ(now["variants"].size(), committed["variants"].size());
  for (std::size_t i = 0; i < now["variants"].size(); ++i) {
    for (const char* part : {"held_out", "fitted_on_all_rows"}) {
      const auto& a = now["variants"][i][part];
      const auto& b = committed["variants"][i][part];
      ASSERT_EQ(a.size(), b.size());
      for (auto it = a.begin(); it != a.end(); ++it)
        for (const char* k : {"mape_percent", "median_ape_percent", "max_ape_percent"})
          EXPECT_NEAR(it.value()[k].get<double>(), b[it.key()][k].get<double>(), 1e-6)
              << part << " " << it.key() << " " << k;
    }
  }
  std::ifstream doc_in("docs/collectives_validation.md");
  ASSERT_TRUE(doc_in);
  std::stringstream doc;
  doc << doc_in.rdbuf();
  for (std::size_t i = 0; i < 2; ++i) {  // ideal and nccl-protocols, held out
    const auto& all = now["variants"][i]["held_out"]["all"];
    char quote[160];
    std::snprintf(quote, sizeof quote, "%s: held-out median %.1f%%, mean %.1f%%, max %.1f%%",
                  now["variants"][i]["name"].get<std::string>().c_str(),
                  all["median_ape_percent"].get<double>(), all["mape_percent"].get<double>(),
                  all["max_ape_percent"].get<double>());
    EXPECT_NE(doc.str().find(quote), std::string::npos) << "docs should quote: " << quote;
  }
}

}  // namespace
}  // namespace dtsim::validation

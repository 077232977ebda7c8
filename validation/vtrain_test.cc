#include "validation/vtrain.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "report/xml_check.h"
#include "validation/accuracy.h"
#include "validation/vtrain_predict.h"
#include "validation/vtrain_report.h"

namespace dtsim::validation {
namespace {

const std::string kBom = "\xEF\xBB\xBF";

// The single-node file's header and two of its rows, with its BOM and CRLF.
const std::string kSingleCsv =
    kBom +
    "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
    "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\r\n"
    "2,16,8,1024,16,24,1024,1,1,2,372.160408\r\n"
    "8,32,4,1024,16,24,1024,2,2,2,219.732754\r\n";

// The multi-node file: the model size comes first.
const std::string kMultiCsv =
    kBom +
    "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
    "sequence length,tensor parallelism,data parallelism,pipeline parallelism,"
    "iteration time (ms)\r\n"
    "3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5\r\n"
    "175,512,1536,2,12288,96,96,2048,8,4,16,81234.5\r\n"
    "\r\n";  // a blank last line is skipped

std::string ErrorOf(const std::string& text) {
  try {
    ParseVtrainCsv(text, "data/x.csv", VtrainGroup::kSingleNode);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseVtrainCsv, ReadsEveryColumnPastTheByteOrderMark) {
  const std::vector<VtrainRow> rows =
      ParseVtrainCsv(kSingleCsv, "data/ground_truth_single.csv", VtrainGroup::kSingleNode);
  ASSERT_EQ(rows.size(), 2u);
  const VtrainRow& r = rows[0];
  EXPECT_EQ(r.group, VtrainGroup::kSingleNode);
  EXPECT_EQ(r.Where(), "ground_truth_single.csv:2");  // the header is line 1
  EXPECT_EQ(r.params_billion, 0);
  EXPECT_EQ(r.gpus, 2);
  EXPECT_EQ(r.global_batch, 16);
  EXPECT_EQ(r.micro_batch, 8);
  EXPECT_EQ(r.hidden, 1024);
  EXPECT_EQ(r.heads, 16);
  EXPECT_EQ(r.layers, 24);
  EXPECT_EQ(r.sequence, 1024);
  EXPECT_EQ(r.tensor_parallel, 1);
  EXPECT_EQ(r.data_parallel, 1);
  EXPECT_EQ(r.pipeline_parallel, 2);
  EXPECT_DOUBLE_EQ(r.measured_ms, 372.160408);
  EXPECT_EQ(rows[1].line, 3);
  EXPECT_EQ(rows[1].tensor_parallel, 2);

  const std::vector<VtrainRow> multi =
      ParseVtrainCsv(kMultiCsv, "ground_truth_multi.csv", VtrainGroup::kMultiNode);
  ASSERT_EQ(multi.size(), 2u);
  EXPECT_DOUBLE_EQ(multi[0].params_billion, 3.6);
  EXPECT_EQ(multi[0].gpus, 64);
  EXPECT_EQ(multi[0].data_parallel, 64);
  EXPECT_DOUBLE_EQ(multi[0].measured_ms, 3566.5);
  EXPECT_EQ(multi[1].params_billion, 175);
  EXPECT_EQ(multi[1].pipeline_parallel, 16);
  EXPECT_EQ(multi[1].group, VtrainGroup::kMultiNode);
}

TEST(ParseVtrainCsv, BadInputNamesFileLineAndColumn) {
  const std::string header =
      "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
      "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\n";
  // A missing column is named.
  EXPECT_NE(ErrorOf("# GPUs,global batch\n2,16\n").find("data/x.csv:1"), std::string::npos);
  EXPECT_NE(ErrorOf("# GPUs,global batch\n2,16\n").find("'micro batch'"), std::string::npos);
  // Not a whole number where the column counts things.
  const std::string e = ErrorOf(header + "2,16,8,1024,16,24,1024,1,1,2,372\n2,16.5,8,1024,16,24,"
                                         "1024,1,1,2,372\n");
  EXPECT_NE(e.find("data/x.csv:3"), std::string::npos) << e;
  EXPECT_NE(e.find("'global batch'"), std::string::npos) << e;
  // Too few fields; a time that is not a number; t x d x p != GPUs.
  EXPECT_NE(ErrorOf(header + "2,16,8\n").find("expected 11 fields"), std::string::npos);
  EXPECT_NE(ErrorOf(header + "2,16,8,1024,16,24,1024,1,1,2,fast\n").find("iteration time"),
            std::string::npos);
  EXPECT_NE(ErrorOf(header + "8,16,8,1024,16,24,1024,2,1,2,372\n").find("is not the number of GPUs"),
            std::string::npos);
  EXPECT_NE(ErrorOf("").find("empty"), std::string::npos);
}

TEST(VtrainScenario, DescribesTheMeasuredRun) {
  const VtrainRow row = ParseVtrainCsv(kMultiCsv, "ground_truth_multi.csv",
                                       VtrainGroup::kMultiNode)[1];  // 175B on 512 GPUs
  const config::Scenario s = VtrainScenario(row);
  EXPECT_EQ(s.name, "vtrain/ground_truth_multi.csv:3");
  // 512 GPUs = 64 nodes x 8 A100.
  EXPECT_EQ(s.cluster.nodes, 64);
  EXPECT_EQ(s.cluster.devices_per_node, 8);
  EXPECT_EQ(s.cluster.device, "A100-SXM4-80GB");
  // The scenario's own 150 GB/s NVLink, with NVSwitch's latency.
  EXPECT_EQ(s.cluster.intra_node_link, kVtrainNvlink);
  ASSERT_EQ(s.cluster.custom_links.size(), 1u);
  EXPECT_EQ(s.cluster.custom_links[0].name, kVtrainNvlink);
  EXPECT_DOUBLE_EQ(s.cluster.custom_links[0].bw_bytes_per_s, 150e9);
  const hw::HardwareCatalog catalog = config::ScenarioCatalog(s);
  EXPECT_DOUBLE_EQ(catalog.FindLink(kVtrainNvlink)->latency_s,
                   catalog.FindLink("nvswitch-a100")->latency_s);
  EXPECT_EQ(catalog.FindLink(kVtrainNvlink)->Problem(), "");
  // 800 Gb/s per node = 4 x HDR.
  EXPECT_EQ(s.cluster.network.link, "ib-hdr");
  EXPECT_EQ(s.cluster.network.nics_per_node, 4);
  // The model.
  ASSERT_TRUE(s.workload.model.transformer.has_value());
  const models::TransformerConfig& t = *s.workload.model.transformer;
  EXPECT_EQ(t.layers, 96);
  EXPECT_EQ(t.hidden, 12288);
  EXPECT_EQ(t.heads, 96);
  EXPECT_EQ(t.sequence, 2048);
  EXPECT_EQ(t.vocab, 50257);
  EXPECT_EQ(s.workload.precision, hw::Precision::kFp16);
  EXPECT_EQ(s.workload.iterations, 1);
  EXPECT_EQ(s.workload.batch_per_device, 1536 / 4);  // the replica's samples
  EXPECT_TRUE(s.workload.compute_efficiency.empty());  // defaults, no fitting
  // The parallelization.
  const config::ParallelismConfig& p = s.parallelism;
  EXPECT_EQ(p.strategy, config::Strategy::kHybrid);
  EXPECT_EQ(p.hybrid.tensor_parallel, 8);
  EXPECT_EQ(p.hybrid.pipeline_parallel, 16);
  EXPECT_EQ(p.hybrid.micro_batch_size, 2);
  EXPECT_EQ(p.hybrid.global_batch, 1536);
  EXPECT_EQ(p.hybrid.schedule, config::PipelineSchedule::kOneFOneB);
  EXPECT_EQ(p.hybrid.virtual_stages, 1);
  EXPECT_TRUE(p.recompute);
  EXPECT_FALSE(p.overlap);                      // no gradient bucketing:
  EXPECT_GE(p.bucket_bytes, 175e9 * 2);         // one bucket holds all fp16 gradients
  EXPECT_FALSE(s.outputs.trace);
}

TEST(VtrainScenario, SmallRunsFitOneNodeAndACatalogLinkMayReplaceTheCustomOne) {
  const VtrainRow row =
      ParseVtrainCsv(kSingleCsv, "ground_truth_single.csv", VtrainGroup::kSingleNode)[0];
  VtrainSetup setup;
  setup.intra_node_link = "nvswitch-a100";
  const config::Scenario s = VtrainScenario(row, setup);
  EXPECT_EQ(s.cluster.nodes, 1);
  EXPECT_EQ(s.cluster.devices_per_node, 2);
  EXPECT_EQ(s.cluster.intra_node_link, "nvswitch-a100");
  EXPECT_TRUE(s.cluster.custom_links.empty());
  EXPECT_EQ(s.parallelism.hybrid.pipeline_parallel, 2);
  EXPECT_EQ(s.workload.model.transformer->sequence, 1024);
}

TEST(Accuracy, MapeOnHandMadeNumbers) {
  // (predicted, measured): (110, 100) +10%, (80, 100) -20%, (150, 120) +25%,
  // (50, 50) 0%.
  EXPECT_DOUBLE_EQ(PercentError(110, 100), 10);
  EXPECT_DOUBLE_EQ(PercentError(80, 100), -20);
  EXPECT_DOUBLE_EQ(AbsPercentError(80, 100), 20);
  EXPECT_DOUBLE_EQ(PercentError(150, 120), 25);
  const ErrorSummary s = SummarizeErrors({10, -20, 25, 0}, 2);
  EXPECT_EQ(s.predicted, 4);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.runs, 6);
  // MAPE (10 + 20 + 25 + 0) / 4 = 13.75; median of 0, 10, 20, 25 = 15;
  // max 25; signed (10 - 20 + 25 + 0) / 4 = 3.75.
  EXPECT_DOUBLE_EQ(s.mean_ape, 13.75);
  EXPECT_DOUBLE_EQ(s.median_ape, 15);
  EXPECT_DOUBLE_EQ(s.max_ape, 25);
  EXPECT_DOUBLE_EQ(s.mean_signed_pe, 3.75);
  EXPECT_DOUBLE_EQ(SummarizeErrors({-7, 3, 5}, 0).median_ape, 5);  // odd count: the middle
  const ErrorSummary none = SummarizeErrors({}, 3);
  EXPECT_EQ(none.runs, 3);
  EXPECT_EQ(none.mean_ape, 0);
}

// Rows 0..n-1 of a made-up file: GPUs alternate 2, 4, 8; measured 100 ms.
std::vector<VtrainRow> MadeUpRows(int n) {
  std::vector<VtrainRow> rows;
  for (int i = 0; i < n; ++i) {
    VtrainRow r;
    r.file = "made_up.csv";
    r.line = i + 2;
    r.gpus = 2 << (i % 3);
    r.tensor_parallel = r.gpus;
    r.data_parallel = r.pipeline_parallel = 1;
    r.global_batch = r.micro_batch = 4;
    r.hidden = 1024;
    r.heads = 16;
    r.layers = 12;
    r.sequence = 1024;
    r.measured_ms = 100;
    r.group = i < n / 2 ? VtrainGroup::kSingleNode : VtrainGroup::kMultiNode;
    rows.push_back(r);
  }
  return rows;
}

TEST(PredictVtrain, AFailingRowDoesNotStopTheOthers) {
  const std::vector<VtrainRow> rows = MadeUpRows(12);
  // 4-GPU rows fail (a UserError, or an internal error on the last one);
  // 8-GPU rows take 0.12 s (+20%), 2-GPU rows 0.09 s (-10%) except row 0,
  // whose prediction is not a number.
  PredictOptions o;
  o.predictor = [](const config::Scenario& s) {
    const int devices = s.cluster.num_devices();
    if (s.name == "vtrain/made_up.csv:2") return std::numeric_limits<double>::quiet_NaN();
    if (s.name == "vtrain/made_up.csv:12") throw std::logic_error("broken invariant");
    if (devices == 4) throw UserError("hybrid is not simulated yet", "wait");
    return devices == 8 ? 0.12 : 0.09;
  };
  std::vector<std::vector<RowPrediction>> runs;
  for (int jobs : {1, 3, 16}) {
    o.jobs = jobs;
    int last_done = -1, calls = 0;
    o.progress = [&](int done, int total) {
      EXPECT_EQ(total, 12);
      EXPECT_GE(done, last_done);
      last_done = done;
      ++calls;
    };
    runs.push_back(PredictVtrain(rows, o));
    EXPECT_EQ(last_done, 12);  // the last call reports every row done
    EXPECT_GE(calls, 1);
  }
  const std::vector<RowPrediction>& p = runs[0];
  ASSERT_EQ(p.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // The results do not depend on the number of threads.
    for (const auto& other : runs) {
      EXPECT_EQ(other[i].error, p[i].error);
      EXPECT_EQ(other[i].predicted_ms, p[i].predicted_ms);
    }
    const int gpus = rows[i].gpus;
    if (i == 0) {
      EXPECT_NE(p[i].error.find("not a time > 0"), std::string::npos) << p[i].error;
    } else if (i == 10) {  // line 12
      EXPECT_EQ(p[i].error, "broken invariant");
    } else if (gpus == 4) {
      EXPECT_EQ(p[i].error, "hybrid is not simulated yet (hint: wait)");
    } else {
      ASSERT_TRUE(p[i].ok()) << i << ": " << p[i].error;
      EXPECT_DOUBLE_EQ(p[i].predicted_ms, gpus == 8 ? 120 : 90);
    }
  }

  // Rows 0..5 single-node, 6..11 multi-node. GPUs by row: 2 4 8 2 4 8 | 2 4 8 2 4 8.
  // Single-node: row 0 failed (NaN), rows 1, 4 failed; rows 2, 5 +20%, row 3 -10%.
  // Multi-node: rows 7, 10 failed; rows 8, 11 +20%, rows 6, 9 -10%.
  const std::vector<RowResult> results = JoinResults(rows, p);
  const VtrainSummary s = SummarizeVtrain(results, 3);
  EXPECT_EQ(s.single_node.runs, 6);
  EXPECT_EQ(s.single_node.failed, 3);
  EXPECT_DOUBLE_EQ(s.single_node.mean_ape, (20 + 10 + 20) / 3.0);
  EXPECT_DOUBLE_EQ(s.single_node.max_ape, 20);
  EXPECT_EQ(s.multi_node.failed, 2);
  EXPECT_DOUBLE_EQ(s.multi_node.mean_ape, 15);
  EXPECT_DOUBLE_EQ(s.multi_node.mean_signed_pe, 5);
  EXPECT_EQ(s.overall.runs, 12);
  EXPECT_EQ(s.overall.predicted, 7);
  EXPECT_DOUBLE_EQ(s.overall.mean_ape, (20 * 4 + 10 * 3) / 7.0);
  // The worst three: the +20% rows, in row order.
  EXPECT_EQ(s.worst, (std::vector<std::size_t>{2, 5, 8}));
  // Three kinds of failure, in order of first appearance.
  ASSERT_EQ(s.failures.size(), 3u);
  EXPECT_EQ(s.failures[0].first, "made_up.csv:2");
  EXPECT_EQ(s.failures[1].rows, 3);  // the 4-GPU rows but the internal error
  EXPECT_EQ(s.failures[1].first, "made_up.csv:3");
  // Slices by tensor parallelism (= GPUs here): multi-node t = 8 is rows 8, 11.
  bool found = false;
  for (const VtrainSummary::Slice& slice : s.slices) {
    if (slice.group == "multi-node" && slice.parameter == "tensor_parallel" &&
        slice.value == "8") {
      found = true;
      EXPECT_EQ(slice.errors.runs, 2);
      EXPECT_DOUBLE_EQ(slice.errors.mean_ape, 20);
    }
  }
  EXPECT_TRUE(found);

  // The files: one CSV line per row and a header; valid JSON; valid SVG.
  const std::string csv = PredictionsCsv(results);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13);
  EXPECT_NE(csv.find(",100,120.0000,20.000,20.000,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",100,,,,hybrid is not simulated yet (hint: wait)\n"), std::string::npos) << csv;
  const auto json = nlohmann::json::parse(SummaryJson(s, results, o.setup));
  EXPECT_EQ(json["overall"]["predicted"], 7);
  EXPECT_DOUBLE_EQ(json["multi_node"]["mape_percent"].get<double>(), 15);
  EXPECT_EQ(json["worst"].size(), 3u);
  EXPECT_EQ(json["setup"]["intra_node_link"], kVtrainNvlink);
  const std::string md = SummaryMarkdown(s, results, o.setup);
  // Median, mean, max: single-node 20, 10, 20 -> 20.0, 16.7, 20.0; multi-node
  // 10, 10, 20, 20 -> 15.0, 15.0, 20.0.
  EXPECT_NE(md.find("| single-node | 6 | 3 | 20.0 | 16.7 | 20.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| multi-node | 6 | 2 | 15.0 | 15.0 | 20.0 |"), std::string::npos) << md;
  const std::string svg = ScatterSvg(results);
  EXPECT_EQ(report::CheckXml(svg), "");
  int circles = 0;  // 7 predicted rows + 2 legend swatches
  for (std::size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) {
    ++circles;
  }
  EXPECT_EQ(circles, 7 + 2);
}

TEST(LoadVtrainData, ReadsTheSharedFilesWhenPresent) {
  const std::string dir = "../shared/validation/vtrain";  // tests run from the repository root
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is not here";
  const std::vector<VtrainRow> all = LoadVtrainData(dir);
  EXPECT_EQ(all.size(), 1440u + 109u);
  EXPECT_EQ(all.front().group, VtrainGroup::kSingleNode);
  EXPECT_EQ(all.back().group, VtrainGroup::kMultiNode);
  EXPECT_GT(all.back().params_billion, 0);
  const std::vector<VtrainRow> some = LoadVtrainData(dir, 5);
  ASSERT_EQ(some.size(), 10u);  // the first 5 of each file
  EXPECT_EQ(some[5].Where(), "ground_truth_multi.csv:2");
  EXPECT_THROW(LoadVtrainData("no/such/folder"), UserError);
}

}  // namespace
}  // namespace dtsim::validation

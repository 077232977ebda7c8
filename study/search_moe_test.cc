// dtsim search on a mixture-of-experts model: expert_parallel is an axis.
#include <gtest/gtest.h>

#include <string>

#include "config/scenario.h"
#include "study/search.h"

namespace dtsim::study {
namespace {

// A 4-layer MoE transformer whose experts alone outgrow a 16 GB V100: 8
// experts of a GELU MLP 1024 -> 16384 -> 1024, 8 x 2 x 1024 x 16384 =
// 268,435,456 params a layer, 1.07 G in 4 layers, x 16 bytes (fp16
// weights and gradients, fp32 master and Adam's two moments) = 17.2 GB
// without ZeRO. Expert parallelism 8 keeps one expert a layer per device:
// 134 M expert params, 2.1 GB.
config::Scenario MoeNode() {
  config::Scenario s;
  s.name = "search-moe-test";
  s.cluster.nodes = 1;
  s.cluster.devices_per_node = 8;
  s.cluster.device = "V100-SXM2-16GB";
  s.cluster.intra_node_link = "nvlink2";
  models::TransformerConfig t;
  t.layers = 4;
  t.hidden = 1024;
  t.heads = 16;
  t.sequence = 256;
  t.vocab = 1000;
  t.ffn_hidden = 16384;
  t.experts = 8;
  t.top_k = 2;
  s.workload.model.transformer = t;
  s.workload.batch_per_device = 1;
  s.workload.precision = hw::Precision::kFp16;
  s.workload.iterations = 2;
  return s;
}

TEST(SearchMoe, FindsAnExpertParallelPlanWhereNoneWithoutFits) {
  const config::Scenario s = MoeNode();
  const models::ModelGraph graph = config::BuildWorkloadModel(s);
  SearchSpace space;
  space.tensor_parallel = {1};
  space.zero_stages = {0};
  space.micro_batch_sizes = {1};
  const Search search = BuildSearch(s, graph, space);
  ASSERT_EQ(search.sweep.axes.back().path, "search.expert_parallel");
  EXPECT_EQ(search.sweep.axes.back().values, (std::vector<std::string>{"1", "2", "4", "8"}));
  const std::vector<PointResult> results = RunSweep(search.sweep);
  const std::vector<std::size_t> ranked = RankSearch(results);
  ASSERT_FALSE(ranked.empty());
  const auto value = [&](std::size_t point, std::size_t axis) {
    const SweepPoint& p = search.sweep.points[point];
    return search.sweep.axes[axis].values[p.choice[axis]];
  };
  const std::size_t expert_axis = search.sweep.axes.size() - 1;
  bool ep1_without_pipeline_fits = false, ep8_without_pipeline_fits = false;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (value(i, 3) != "1" || !results[i].feasible) continue;  // pipeline_parallel 1
    ep1_without_pipeline_fits |= value(i, expert_axis) == "1";
    ep8_without_pipeline_fits |= value(i, expert_axis) == "8";
  }
  EXPECT_FALSE(ep1_without_pipeline_fits);
  EXPECT_TRUE(ep8_without_pipeline_fits);
  // The fastest plan shards the experts.
  EXPECT_NE(value(ranked[0], expert_axis), "1");
  EXPECT_EQ(search.sweep.points[ranked[0]].scenario.parallelism.strategy,
            config::Strategy::kHybrid);
}

}  // namespace
}  // namespace dtsim::study

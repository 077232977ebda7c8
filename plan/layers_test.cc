#include "plan/layers.h"

#include <gtest/gtest.h>

namespace dtsim::plan {
namespace {

models::Op NamedOp(const std::string& name) {
  models::Op op;
  op.name = name;
  op.kind = models::OpKind::kRelu;
  return op;
}

TEST(LayerUnitName, CutsAtSecondDotOnlyWhenSecondPartIsANumber) {
  EXPECT_EQ(LayerUnitName("layer1.0.conv1"), "layer1.0");
  EXPECT_EQ(LayerUnitName("layer1.12.bn2"), "layer1.12");
  EXPECT_EQ(LayerUnitName("layer1.0"), "layer1.0");  // number without a third part
  EXPECT_EQ(LayerUnitName("layer0.attn.ln"), "layer0");
  EXPECT_EQ(LayerUnitName("embed.tokens"), "embed");
  EXPECT_EQ(LayerUnitName("conv1"), "conv1");
  EXPECT_EQ(LayerUnitName("a.1x.b"), "a");  // "1x" is not a number
  EXPECT_EQ(LayerUnitName("a..b"), "a");    // empty second part is not a number
}

TEST(LayerUnits, GroupsConsecutiveOpsAndCoversTheGraph) {
  models::ModelGraph g("t");
  // 0 input | 1,2 embed | 3,4,5 layer0 | 6 layer1.0 | 7 final_ln | 8 embed again
  const char* names[] = {"input",          "embed.tokens",    "embed.pos",
                         "layer0.attn.ln", "layer0.attn.qkv", "layer0.mlp.fc1",
                         "layer1.0.conv1", "final_ln",        "embed.tied"};
  models::OpId prev = g.AddOp(NamedOp(names[0]), {});
  for (std::size_t i = 1; i < std::size(names); ++i) prev = g.AddOp(NamedOp(names[i]), {prev});

  const std::vector<LayerUnit> units = LayerUnits(g);
  ASSERT_EQ(units.size(), 6u);
  const struct {
    const char* name;
    models::OpId begin, end;
  } want[] = {{"input", 0, 1},    {"embed", 1, 3},    {"layer0", 3, 6},
              {"layer1.0", 6, 7}, {"final_ln", 7, 8}, {"embed", 8, 9}};
  for (std::size_t i = 0; i < units.size(); ++i) {
    EXPECT_EQ(units[i].name, want[i].name) << i;
    EXPECT_EQ(units[i].begin, want[i].begin) << i;
    EXPECT_EQ(units[i].end, want[i].end) << i;
  }
}

TEST(LayerUnits, EmptyGraphHasNoUnits) {
  models::ModelGraph g("empty");
  EXPECT_TRUE(LayerUnits(g).empty());
}

}  // namespace
}  // namespace dtsim::plan

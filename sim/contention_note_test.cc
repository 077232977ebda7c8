#include "sim/contention_note.h"

#include <gtest/gtest.h>

#include "config/scenario.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

std::string NoteOf(const std::string& path, const std::string& engine = "") {
  config::Scenario s = config::LoadScenario(path);
  if (!engine.empty()) {
    s.engine = engine;
    // SimGrid simulates no host: the device alone, as the analytic engine
    // does with framework none.
    s.workload.framework = *config::FindFramework("none");
  }
  return ContentionNote(s, Simulate(s, {.fast = true}).plan);
}

// Issue 44 item 7: on a 2-node expert-parallel plan the analytic engine was
// 19% faster than SimGrid (its all-to-alls and the gradient reductions of
// the tensor ranks meet on the NICs) and nothing said so.
TEST(ContentionNote, SaysWhenConcurrentCollectivesShareANodesLinks) {
  EXPECT_NE(NoteOf("scenarios/mixtral-8x7b-64xH100-ep8.yaml"), "");
  EXPECT_NE(NoteOf("scenarios/gpt3-175b-fp8-h100.yaml"), "") << "8 DP groups per node pair";
  // SimGrid shares the links: nothing to say.
  EXPECT_EQ(NoteOf("scenarios/mixtral-8x7b-64xH100-ep8.yaml", "simgrid"), "");
  // One node; or one ring over the nodes, its buckets one after another.
  EXPECT_EQ(NoteOf("scenarios/cifar10-4gpu.yaml"), "");
  EXPECT_EQ(NoteOf("scenarios/resnet50-16xV100-25GbE.yaml"), "");
}

}  // namespace
}  // namespace dtsim::sim

#include "plan/plan_export.h"

#include <gtest/gtest.h>

#include <string>

#include "models/graph.h"
#include "models/zoo.h"

namespace dtsim::plan {
namespace {

// Issue 10, item 8: the per-rank task counts of `dtsim plan` were indexed by
// an array one slot short of TaskKind, so pipeline backward tasks were shown
// as "optimizer", optimizer tasks as "collective", and so on. Each kind gets
// a distinct count here so that any shift shows.
TEST(FormatPlacement, CountsEveryTaskKindUnderItsOwnLabel) {
  Plan p;
  p.ranks = {{0, 0}, {0, 1}};
  p.ops_on_rank.resize(2);
  auto add = [&](TaskKind kind, int n) {
    for (int i = 0; i < n; ++i) {
      Task t;
      t.kind = kind;
      t.rank = 0;
      if (kind == TaskKind::kSend || kind == TaskKind::kRecv) {
        t.stream = StreamKind::kComm;
        t.peer = 1;
      }
      p.AddTask(t);
    }
  };
  add(TaskKind::kForward, 1);
  add(TaskKind::kBackward, 2);
  add(TaskKind::kBackwardInput, 3);
  add(TaskKind::kBackwardWeight, 4);
  add(TaskKind::kOptimizer, 5);
  add(TaskKind::kSend, 6);
  add(TaskKind::kRecv, 7);
  Collective c;
  c.group = p.AddGroup({0, 1});
  p.AddCollective(c, {{}, {}}, 0);
  const std::string text = FormatPlacement(p, models::ModelGraph(), 16);
  EXPECT_NE(text.find(": 1 forward, 2 backward, 3 backward-input, 4 backward-weight, "
                      "5 optimizer, 1 collective, 13 send/recv\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(": 0 forward, 0 backward, 0 backward-input, 0 backward-weight, "
                      "0 optimizer, 1 collective, 0 send/recv\n"),
            std::string::npos)
      << text;
}

// Collectives are labelled by what they reduce (timelines, `dtsim plan`):
// the tied-embedding all-reduce of issue 10 item 12 showed as "bucket 0".
TEST(TaskLabel, NamesWhatACollectiveReduces) {
  const models::ModelGraph g = models::BuildZooModel("mnist-mlp");
  Plan p;
  p.ranks = {{0, 0}, {0, 1}};
  const auto group = p.AddGroup({0, 1});
  auto label = [&](Collective c) {
    c.group = group;
    const auto ci = p.AddCollective(c, {{}, {}}, 0);
    return TaskLabel(p, g, p.task(p.collectives()[static_cast<std::size_t>(ci)].tasks[0]));
  };
  Collective bucket;
  bucket.bucket = 3;
  EXPECT_EQ(label(bucket), "all_reduce bucket 3");
  Collective shared;
  shared.shared_op = 1;
  EXPECT_EQ(label(shared), "all_reduce shared " + g.op(1).name);
  Collective tp;
  tp.activations = true;
  EXPECT_EQ(label(tp), "all_reduce tensor-parallel");
}

}  // namespace
}  // namespace dtsim::plan

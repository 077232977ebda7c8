#include "plan/chakra_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "plan/chakra_decode.h"
#include "plan/chakra_process_groups.h"
#include "plan/chakra_test_traces.h"

namespace dtsim::plan {
namespace {

namespace cf = dtsim::chakra_format;

using chakra_test::TraceWriter;

cf::Node* Comp(TraceWriter& w, std::uint64_t id, std::uint64_t micros,
               std::vector<std::uint64_t> deps = {}) {
  return w.Compute(id, micros, std::move(deps));
}

cf::Node* AllReduce(TraceWriter& w, std::uint64_t id, std::int64_t bytes,
                    std::vector<std::uint64_t> deps = {}) {
  return w.AllReduce(id, bytes, std::move(deps));
}

std::string ImportError(const std::vector<ChakraTrace>& traces) {
  try {
    ImportChakra(traces, {});
  } catch (const UserError& e) {
    return e.where().ToString() + ": " + e.message();
  }
  return "";
}

// Two ranks: compute, all-reduce, compute. Nodes listed out of order (the
// second compute first) are ordered by their dependencies; a metadata node
// passes its dependencies on.
TEST(ChakraImport, NodesBecomeTasksAndCollectives) {
  std::vector<ChakraTrace> traces;
  for (int r = 0; r < 2; ++r) {
    TraceWriter w;
    Comp(w, 30, 200, {25});
    w.Node(25, cf::METADATA_NODE, {20});
    Comp(w, 10, 100 * (r + 1));
    AllReduce(w, 20, 4096, {10});
    traces.push_back(w.Finish("t." + std::to_string(r) + ".et"));
  }
  ChakraImportOptions options;
  options.devices_per_node = 1;
  const Plan plan = ImportChakra(traces, options);
  ASSERT_EQ(plan.num_ranks(), 2);
  EXPECT_EQ(plan.ranks[1].node, 1);
  ASSERT_EQ(plan.collectives().size(), 1u);
  const Collective& c = plan.collectives()[0];
  EXPECT_EQ(c.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(c.bytes, 4096);
  EXPECT_EQ(plan.groups()[static_cast<std::size_t>(c.group)], (std::vector<RankId>{0, 1}));
  ASSERT_EQ(plan.num_tasks(), 6u);  // 2 x (compute, collective member, compute)
  int compute = 0;
  for (std::size_t i = 0; i < plan.num_tasks(); ++i) {
    const Task& t = plan.tasks()[i];
    if (t.kind != TaskKind::kForward) continue;
    ++compute;
    EXPECT_EQ(t.op, -1);
    if (t.seconds == 200e-6) {
      // The last compute waits for its rank's collective member (through
      // the metadata node).
      const auto deps = plan.deps(static_cast<TaskId>(i));
      ASSERT_EQ(deps.size(), 1u);
      EXPECT_EQ(plan.tasks()[static_cast<std::size_t>(deps[0])].kind, TaskKind::kCollective);
      EXPECT_EQ(plan.tasks()[static_cast<std::size_t>(deps[0])].rank, t.rank);
    }
  }
  EXPECT_EQ(compute, 4);
}

// Nodes without a duration are priced from num_ops: 2e9 FLOPs at 1e12
// FLOP/s take 2 ms.
// Nodes are counted as they are read: a file of empty nodes (one byte
// each) is refused at the bound, before it is decoded whole.
TEST(ChakraImport, NodesAreBoundedAsTheyAreRead) {
  std::string bytes;
  chakra_test::AppendDelimited(cf::GlobalMetadata(), &bytes);
  bytes += std::string(11, '\0');  // 11 empty nodes
  const ChakraTrace t{"empty.0.et", bytes};
  ChakraImportReport report;
  try {
    DecodeChakraTrace(t, {}, &report, 10);
    FAIL() << "11 nodes read with a bound of 10";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 10 nodes"), std::string::npos) << e.what();
  }
  EXPECT_GE(kMaxChakraNodes, std::size_t{1} << 20);
}

TEST(ChakraImport, NumOpsAtTheGivenRate) {
  TraceWriter w;
  cf::Node* n = w.Node(1, cf::COMP_NODE);
  chakra_test::SetInt(n, "num_ops", 2'000'000'000);
  const ChakraTrace trace = w.Finish("one.0.et");
  ChakraImportOptions options;
  options.compute_flops_per_s = 1e12;
  EXPECT_DOUBLE_EQ(ImportChakra({trace}, options).tasks()[0].seconds, 2e-3);
  EXPECT_NE(ImportError({trace}).find("one.0.et: node 1 'n1' has num_ops but no duration_micros"),
            std::string::npos);
}

// Every collective type dtsim prices becomes its plan collective.
TEST(ChakraImport, CollectiveTypes) {
  const std::vector<std::pair<cf::CollectiveCommType, CollectiveOp>> types = {
      {cf::ALL_REDUCE, CollectiveOp::kAllReduce},   {cf::REDUCE, CollectiveOp::kReduce},
      {cf::ALL_GATHER, CollectiveOp::kAllGather},   {cf::BROADCAST, CollectiveOp::kBroadcast},
      {cf::ALL_TO_ALL, CollectiveOp::kAllToAll},    {cf::REDUCE_SCATTER, CollectiveOp::kReduceScatter},
      {cf::BARRIER, CollectiveOp::kBarrier}};
  std::vector<ChakraTrace> traces;
  for (int r = 0; r < 2; ++r) {
    TraceWriter w;
    for (std::size_t i = 0; i < types.size(); ++i) {
      cf::Node* n = w.Node(i + 1, cf::COMM_COLL_NODE);
      chakra_test::SetInt(n, "comm_type", types[i].first);
      chakra_test::SetInt(n, "comm_size", types[i].first == cf::BARRIER ? 0 : 1024);
    }
    traces.push_back(w.Finish("t." + std::to_string(r) + ".et"));
  }
  const Plan plan = ImportChakra(traces, {});
  ASSERT_EQ(plan.collectives().size(), types.size());
  for (std::size_t i = 0; i < types.size(); ++i)
    EXPECT_EQ(plan.collectives()[i].op, types[i].second) << CollectiveOpName(types[i].second);
}

TEST(ChakraImport, RefusesWhatItCannotRepresent) {
  {  // collectives that differ between ranks
    TraceWriter a, b;
    AllReduce(a, 1, 1024);
    AllReduce(b, 1, 2048);
    const std::string e = ImportError({a.Finish("a.et"), b.Finish("b.et")});
    EXPECT_NE(e.find("b.et: node 1 'n1': collective 0 of this rank (type 0, 2048 bytes) differs "
                     "from rank 0's"),
              std::string::npos)
        << e;
  }
  {  // a collective one rank never reaches
    TraceWriter a, b;
    AllReduce(a, 1, 1024);
    Comp(b, 1, 10);
    const std::string e = ImportError({a.Finish("a.et"), b.Finish("b.et")});
    EXPECT_NE(e.find("a.et: node 1 'n1' is collective 0 of this rank, which ranks 1 never reach"),
              std::string::npos)
        << e;
  }
  {  // a receive without its send
    TraceWriter a, b;
    Comp(a, 1, 10);
    cf::Node* recv = b.Node(1, cf::COMM_RECV_NODE);
    chakra_test::SetInt(recv, "comm_src", 0);
    const std::string e = ImportError({a.Finish("a.et"), b.Finish("b.et")});
    EXPECT_NE(e.find("b.et: node 1 'n1' receives from rank 0, which never sends it"),
              std::string::npos)
        << e;
  }
  {  // a cycle, and a dependency on a node that is not there
    TraceWriter a;
    Comp(a, 1, 10, {2});
    Comp(a, 2, 10, {1});
    EXPECT_NE(ImportError({a.Finish("a.et")}).find("node 1 'n1' is on a dependency cycle"),
              std::string::npos);
    TraceWriter b;
    Comp(b, 1, 10, {7});
    EXPECT_NE(ImportError({b.Finish("b.et")})
                  .find("node 1 'n1' depends on node 7, which the trace does not hold"),
              std::string::npos);
  }
  {  // a gather, which dtsim's plans do not express
    TraceWriter a;
    cf::Node* n = a.Node(1, cf::COMM_COLL_NODE);
    chakra_test::SetInt(n, "comm_type", cf::GATHER);
    chakra_test::SetInt(n, "comm_size", 8);
    EXPECT_NE(ImportError({a.Finish("a.et")}).find("collective type 3 is not supported"),
              std::string::npos);
  }
  {  // bytes that are not a trace, and a trace cut short
    EXPECT_NE(ImportError({{"junk.et", "\x05junk"}}).find("junk.et: message 0"),
              std::string::npos);
    TraceWriter a;
    Comp(a, 1, 10);
    ChakraTrace t = a.Finish("cut.et");
    t.bytes.pop_back();
    EXPECT_NE(ImportError({t}).find("cut.et: message 1"), std::string::npos) << ImportError({t});
  }
}


// Process groups as PyTorch records them and Chakra's converter keeps them:
// a METADATA_NODE listing each group's ranks (empty = all), and pg_name on
// every collective.
cf::Node* ProcessGroupInit(TraceWriter& w, std::uint64_t id, const std::string& groups) {
  cf::Node* n = w.Node(id, cf::METADATA_NODE);
  n->set_name("## process_group:init ##");
  n->mutable_inputs()->set_values("['" + groups + "']");
  return n;
}

void SetString(cf::Node* n, const std::string& name, const std::string& v) {
  cf::AttributeProto* a = n->add_attr();
  a->set_name(name);
  a->set_string_val(v);
}

// Four ranks, tensor-parallel pairs {0, 1} and {2, 3} (groups "1" and "2")
// and data-parallel pairs {0, 2} and {1, 3} ("3" and "4"); the default
// group "0" is every rank. Each rank all-reduces in its tensor-parallel
// group, then in its data-parallel group, then a barrier over group "0".
// Collectives with a pg_name used to run over all four ranks.
TEST(ChakraImport, CollectivesRunOverTheirProcessGroup) {
  const std::string groups =
      R"([{"pg_name": "0", "pg_desc": "default_pg", "ranks": []}, )"
      R"({"pg_name": "1", "ranks": [0, 1]}, {"pg_name": "2", "ranks": [2, 3]}, )"
      R"({"pg_name": "3", "ranks": [0, 2]}, {"pg_name": "4", "ranks": [1, 3]}])";
  std::vector<ChakraTrace> traces;
  for (int r = 0; r < 4; ++r) {
    TraceWriter w;
    ProcessGroupInit(w, 1, groups);
    SetString(AllReduce(w, 2, 1000, {1}), "pg_name", r < 2 ? "1" : "2");
    SetString(AllReduce(w, 3, 2000, {2}), "pg_name", r % 2 == 0 ? "3" : "4");
    cf::Node* b = w.Node(4, cf::COMM_COLL_NODE, {3});
    chakra_test::SetInt(b, "comm_type", cf::BARRIER);
    chakra_test::SetInt(b, "comm_size", 0);
    SetString(b, "pg_name", "0");
    traces.push_back(w.Finish("pg." + std::to_string(r) + ".et"));
  }
  const Plan plan = ImportChakra(traces, {});
  // 2 tensor-parallel + 2 data-parallel all-reduces + 1 barrier.
  ASSERT_EQ(plan.collectives().size(), 5u);
  std::vector<std::pair<std::vector<RankId>, double>> seen;
  for (const Collective& c : plan.collectives())
    seen.push_back({plan.groups()[static_cast<std::size_t>(c.group)], c.bytes});
  std::sort(seen.begin(), seen.end());
  const std::vector<std::pair<std::vector<RankId>, double>> expected = {
      {{0, 1}, 1000}, {{0, 1, 2, 3}, 0}, {{0, 2}, 2000}, {{1, 3}, 2000}, {{2, 3}, 1000}};
  EXPECT_EQ(seen, expected);
}

TEST(ChakraImport, RefusesProcessGroupsItCannotPlace) {
  const auto trace = [](const std::string& groups, const std::string& pg, int rank) {
    TraceWriter w;
    if (!groups.empty()) ProcessGroupInit(w, 1, groups);
    SetString(AllReduce(w, 2, 8), "pg_name", pg);
    return w.Finish("g." + std::to_string(rank) + ".et");
  };
  {  // a group the trace does not list
    const std::string e = ImportError({trace("", "5", 0), trace("", "5", 1)});
    EXPECT_NE(e.find("g.0.et: node 2 'n2': process group '5' has no list of members"),
              std::string::npos)
        << e;
  }
  {  // a rank outside the group it names
    const std::string g = R"([{"pg_name": "1", "ranks": [0]}])";
    const std::string e = ImportError({trace(g, "1", 0), trace(g, "1", 1)});
    EXPECT_NE(e.find("g.1.et: node 2 'n2': rank 1 is not a member of process group '1'"),
              std::string::npos)
        << e;
  }
  {  // ranks that disagree on a group's members
    const std::string e = ImportError({trace(R"([{"pg_name": "1", "ranks": [0, 1]}])", "1", 0),
                                       trace(R"([{"pg_name": "1", "ranks": [1]}])", "1", 1)});
    EXPECT_NE(e.find("process group '1' has other ranks than g.0.et node 1"), std::string::npos)
        << e;
  }
  {  // metadata that mentions pg_name but is not the form
    const std::string e = ImportError({trace(R"({"pg_name": 1})", "1", 0)});
    EXPECT_NE(e.find("g.0.et: node 1 '## process_group:init ##': process-group metadata is not a "
                     "list of groups"),
              std::string::npos)
        << e;
  }
  {  // a group's collective one member never reaches
    const std::string g = R"([{"pg_name": "1", "ranks": [0, 1]}])";
    TraceWriter b;
    ProcessGroupInit(b, 1, g);
    Comp(b, 2, 10);
    const std::string e = ImportError({trace(g, "1", 0), b.Finish("g.1.et")});
    EXPECT_NE(e.find("g.0.et: node 2 'n2' is collective 0 of this rank on process group '1', "
                     "which ranks 1 never reach"),
              std::string::npos)
        << e;
  }
}

TEST(ChakraProcessGroups, ParsesBothForms) {
  const auto meta = ParseProcessGroupMetadata(
      R"(['[{"pg_name": "0", "ranks": []}, {"pg_name": "7", "pg_desc": "it\'s", "ranks": [3, 1]}]'])");
  ASSERT_TRUE(meta.has_value());
  EXPECT_EQ(meta->at("0"), std::vector<int>{});
  EXPECT_EQ(meta->at("7"), (std::vector<int>{3, 1}));
  EXPECT_FALSE(ParseProcessGroupMetadata("['[1, 2]']").has_value());  // not about groups
  const ChakraProcessGroups file = ParseCommGroupFile(R"({"1": [0, 1], "2": [2, 3]})");
  EXPECT_EQ(file.at("2"), (std::vector<int>{2, 3}));
  EXPECT_THROW(ParseCommGroupFile("[1]"), std::invalid_argument);
  EXPECT_THROW(ParseCommGroupFile(R"({"1": [-1]})"), std::invalid_argument);
}


void SetBool(cf::Node* n, const std::string& name, bool v) {
  cf::AttributeProto* a = n->add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}

// What Chakra's PyTorch converter writes, in small: host operators
// (is_cpu_op) whose ctrl_deps name their caller, GPU kernels after them,
// a dependency on a node the converter dropped (99), and a caller whose
// data_deps wait for its callee (a cycle through ctrl_deps):
//   1 aten::linear (host, 30 us)  data_deps [2]
//   2 aten::addmm  (host, 20 us)  ctrl_deps [1]
//   3 gemm kernel  (GPU, 100 us)  ctrl_deps [2], data_deps [2]
//   4 add kernel   (GPU, 50 us)   data_deps [3, 99]
ChakraTrace ConverterShapedTrace() {
  TraceWriter w;
  cf::Node* linear = Comp(w, 1, 30, {2});
  SetBool(linear, "is_cpu_op", true);
  cf::Node* addmm = Comp(w, 2, 20);
  addmm->add_ctrl_deps(1);
  SetBool(addmm, "is_cpu_op", true);
  cf::Node* gemm = Comp(w, 3, 100, {2});
  gemm->add_ctrl_deps(2);
  SetBool(gemm, "is_cpu_op", false);
  SetBool(Comp(w, 4, 50, {3, 99}), "is_cpu_op", false);
  return w.Finish("conv.0.et");
}

std::string ImportError(const ChakraTrace& trace, const ChakraCleanup& cleanup) {
  ChakraImportOptions options;
  options.cleanup = cleanup;
  try {
    ImportChakra({trace}, options);
  } catch (const UserError& e) {
    return e.where().ToString() + ": " + e.message() + " hint: " + e.hint();
  }
  return "";
}

// Each defect of converter output is refused by default, with the clean-up
// that removes it named; with every clean-up the GPU kernels remain.
TEST(ChakraImport, ConverterOutputIsCleanedUpOnlyWhenAsked) {
  const ChakraTrace trace = ConverterShapedTrace();
  ChakraCleanup cleanup;
  std::string e = ImportError(trace, cleanup);
  EXPECT_NE(e.find("conv.0.et: node 4 'n4' depends on node 99, which the trace does not hold"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--drop-dangling-deps"), std::string::npos) << e;
  cleanup.drop_dangling_deps = true;
  e = ImportError(trace, cleanup);
  EXPECT_NE(e.find("is on a dependency cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("--ignore-ctrl-deps"), std::string::npos) << e;
  cleanup.ignore_ctrl_deps = true;
  e = ImportError(trace, cleanup);
  EXPECT_NE(e.find("conv.0.et: node 2 'n2' is a host operator (is_cpu_op) of 20 us"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--host-ops drop"), std::string::npos) << e;

  // Dropped host operators: the two kernels, 100 + 50 us, the second after
  // the first; 1 dangling dependency and 2 ctrl_deps (nodes 2 and 3) gone.
  ChakraImportOptions options;
  options.cleanup = cleanup;
  options.cleanup.host_ops = ChakraHostOps::kDrop;
  ChakraImportReport report;
  Plan plan = ImportChakra({trace}, options, &report);
  ASSERT_EQ(plan.num_tasks(), 2u);
  EXPECT_DOUBLE_EQ(plan.tasks()[0].seconds, 100e-6);
  EXPECT_DOUBLE_EQ(plan.tasks()[1].seconds, 50e-6);
  EXPECT_EQ(std::vector<TaskId>(plan.deps(1).begin(), plan.deps(1).end()), std::vector<TaskId>{0});
  EXPECT_EQ(report.dangling_deps_dropped, 1);
  EXPECT_EQ(report.ctrl_deps_ignored, 2);
  EXPECT_EQ(report.host_ops_dropped, 2);
  EXPECT_EQ(report.compute_nodes, 2);
  EXPECT_EQ(report.zero_duration_compute_nodes, 0);

  // Serialized: all four on the compute stream, 30 + 20 + 100 + 50 us, in
  // an order of their data_deps (2, then 1 and 3, then 4).
  options.cleanup.host_ops = ChakraHostOps::kSerialize;
  plan = ImportChakra({trace}, options, &report);
  ASSERT_EQ(plan.num_tasks(), 4u);
  double total = 0;
  for (const Task& t : plan.tasks()) total += t.seconds;
  EXPECT_NEAR(total, 200e-6, 1e-12);
  EXPECT_DOUBLE_EQ(plan.tasks()[0].seconds, 20e-6);
  EXPECT_EQ(report.host_ops_serialized, 2);
  EXPECT_EQ(report.host_ops_dropped, 0);
}

// A trace whose compute nodes all lack durations (and FLOPs): counted, so
// the command warns instead of reporting a 0 ms step as a result.
TEST(ChakraImport, ZeroDurationComputeIsCounted) {
  TraceWriter w;
  Comp(w, 1, 0);
  Comp(w, 2, 0, {1});
  ChakraImportReport report;
  ImportChakra({w.Finish("zero.0.et")}, {}, &report);
  EXPECT_EQ(report.compute_nodes, 2);
  EXPECT_EQ(report.zero_duration_compute_nodes, 2);
}

}  // namespace
}  // namespace dtsim::plan

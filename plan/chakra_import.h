// Plans from MLCommons Chakra execution traces (the format ASTRA-sim reads;
// PyTorch's execution-trace observer and Chakra's converter write them):
// one trace per rank, its nodes and their dependencies turned into a plan
// (plan.h) that either engine simulates on a scenario's cluster.
//
// Per node type (docs/chakra.md):
//   COMP_NODE       a compute task on the rank's compute stream, of the
//                   node's duration_micros; without one, num_ops FLOPs at
//                   ChakraImportOptions::compute_flops_per_s.
//   COMM_COLL_NODE  the rank's part of a collective (comm_type ALL_REDUCE,
//                   REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL,
//                   REDUCE_SCATTER or BARRIER; comm_size bytes, the plan's
//                   Collective::bytes) over the ranks of its process group
//                   (pg_name, plan/chakra_process_groups.h), or over all
//                   ranks without one. The k-th collective of each member on
//                   a group is one collective: every member must list the
//                   same sequence (type and size).
//   COMM_SEND_NODE  a transfer of comm_size bytes to comm_dst;
//   COMM_RECV_NODE  the matching receive (comm_src; the i-th receive from
//                   a source matches that source's i-th send to this rank,
//                   and comm_tag, when given, must agree): nodes after it
//                   wait for the transfer.
//   METADATA_NODE, MEM_LOAD_NODE, MEM_STORE_NODE
//                   no time; nodes after them wait for what they wait for.
//                   A METADATA_NODE may list the process groups.
// data_deps and ctrl_deps both order nodes; a rank's nodes run in an order
// that respects them (the file's order where it does). A COMP_NODE with
// is_cpu_op true is a host operator: ChakraCleanup::host_ops says what
// becomes of it.
//
// Errors are UserErrors naming the file and the node (id and name).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plan/chakra_process_groups.h"
#include "plan/plan.h"

namespace dtsim::plan {

// What becomes of a host operator (a COMP_NODE with is_cpu_op true, as
// Chakra's PyTorch converter marks the CPU side of each operator).
enum class ChakraHostOps : std::uint8_t {
  kRefuse,     // refused when it has a duration (dtsim simulates GPU streams)
  kDrop,       // no time; nodes after it wait for what it waits for
  kSerialize,  // a compute task on the GPU's stream, one after the other
};

// The clean-up ASTRA-sim users apply to converter output by hand. Default:
// none; what it would remove is refused instead.
struct ChakraCleanup {
  // Dependencies on nodes the trace does not hold are dropped (default:
  // refused).
  bool drop_dangling_deps = false;
  // ctrl_deps do not order nodes (in the PyTorch converter's output they
  // name a node's caller); only data_deps do. Default: both order.
  bool ignore_ctrl_deps = false;
  ChakraHostOps host_ops = ChakraHostOps::kRefuse;
};

// What an import found and did, for the user to see.
struct ChakraImportReport {
  std::int64_t dangling_deps_dropped = 0;
  std::int64_t ctrl_deps_ignored = 0;
  std::int64_t host_ops_dropped = 0;
  std::int64_t host_ops_serialized = 0;
  std::int64_t compute_nodes = 0;                // compute tasks made
  std::int64_t zero_duration_compute_nodes = 0;  // of them, taking no time
};

struct ChakraImportOptions {
  int devices_per_node = 1;  // rank r sits on node r / devices_per_node
  // Prices COMP nodes that carry num_ops but no duration; 0 = such nodes
  // are refused.
  double compute_flops_per_s = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  // The plan's global batch (for throughput); 0 = unknown.
  std::int64_t samples_per_iteration = 0;
  // Process groups besides those the traces' metadata nodes list (an
  // ASTRA-sim communicator-group file), and that file's name for messages.
  ChakraProcessGroups process_groups;
  std::string process_groups_file;
  ChakraCleanup cleanup;
};

// One trace: a name for messages and the file's bytes (plan/chakra_files.h
// reads them from disk).
struct ChakraTrace {
  std::string name;
  std::string bytes;
};

// The plan of `traces`, traces[r] being rank r's; fills `report` when
// given. REQUIRES: at least one trace.
Plan ImportChakra(const std::vector<ChakraTrace>& traces, const ChakraImportOptions& options,
                  ChakraImportReport* report = nullptr);

}  // namespace dtsim::plan

#include "plan/chakra_decode.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <set>

#include "common/error.h"

namespace dtsim::plan {
namespace {

namespace cf = dtsim::chakra_format;

// Reads one length-delimited message (Chakra's framing: a varint length,
// then the message) into `m`; false at the end of the input.
template <typename Message>
bool ReadDelimited(google::protobuf::io::CodedInputStream& in, int total, Message* m,
                   const std::string& trace, int index) {
  if (in.CurrentPosition() >= total) return false;
  std::uint32_t size = 0;
  if (!in.ReadVarint32(&size)) {
    ChakraFail(trace, "message " + std::to_string(index) + ": its length is cut off");
  }
  const auto limit = in.PushLimit(static_cast<int>(size));
  const int before = in.CurrentPosition();
  if (!m->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage() ||
      in.CurrentPosition() - before != static_cast<int>(size)) {
    ChakraFail(trace, "message " + std::to_string(index) + " (" + std::to_string(size) +
                          " bytes) is not a Chakra " + (index == 0 ? "GlobalMetadata" : "Node") +
                          " or is cut off");
  }
  in.PopLimit(limit);
  return true;
}

}  // namespace

void ChakraFail(const std::string& trace, const std::string& message, const std::string& hint) {
  throw UserError(SourceLocation{trace, 0, 0}, message,
                  hint.empty() ? "dtsim reads Chakra traces as docs/chakra.md describes" : hint);
}

std::string NodeText(const cf::Node& n) {
  return "node " + std::to_string(n.id()) + (n.name().empty() ? "" : " '" + n.name() + "'");
}

RankTrace DecodeChakraTrace(const ChakraTrace& t, const ChakraCleanup& cleanup,
                            ChakraImportReport* report, std::size_t max_nodes) {
  RankTrace r{t.name, {}};
  if (t.bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    ChakraFail(t.name, "the trace is larger than 2 GiB");
  }
  google::protobuf::io::ArrayInputStream raw(t.bytes.data(), static_cast<int>(t.bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());
  const auto total = static_cast<int>(t.bytes.size());
  cf::GlobalMetadata meta;
  if (!ReadDelimited(in, total, &meta, t.name, 0)) ChakraFail(t.name, "the trace is empty");
  // At most `max_nodes` nodes per trace, counted as they are read:
  // an empty node is one byte of the file and a decoded one a few hundred
  // bytes of memory.
  std::vector<cf::Node> nodes;
  for (cf::Node n; ReadDelimited(in, total, &n, t.name, static_cast<int>(nodes.size()) + 1);) {
    if (nodes.size() == max_nodes) {
      ChakraFail(t.name, "the trace has more than " + std::to_string(max_nodes) + " nodes",
                 "dtsim simulates traces of up to that many nodes per rank");
    }
    nodes.push_back(std::move(n));
    n.Clear();
  }
  std::map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!index.emplace(nodes[i].id(), i).second) {
      ChakraFail(t.name, "two nodes have id " + std::to_string(nodes[i].id()));
    }
  }
  // Each node's dependencies become its data_deps (the builder reads
  // those): both lists, less what the clean-up drops.
  bool ctrl_ordered = false;  // a ctrl_dep orders some node
  for (cf::Node& n : nodes) {
    std::set<std::uint64_t> deps(n.data_deps().begin(), n.data_deps().end());
    if (cleanup.ignore_ctrl_deps) {
      report->ctrl_deps_ignored += n.ctrl_deps_size();
    } else {
      ctrl_ordered |= n.ctrl_deps_size() > 0;
      deps.insert(n.ctrl_deps().begin(), n.ctrl_deps().end());
    }
    n.clear_data_deps();
    n.clear_ctrl_deps();
    for (std::uint64_t d : deps) {
      if (index.count(d)) {
        n.add_data_deps(d);
      } else if (cleanup.drop_dangling_deps) {
        ++report->dangling_deps_dropped;
      } else {
        ChakraFail(t.name,
                   NodeText(n) + " depends on node " + std::to_string(d) +
                       ", which the trace does not hold",
                   "Chakra's PyTorch converter drops nodes others still depend on; "
                   "--drop-dangling-deps drops such dependencies");
      }
    }
  }
  // Kahn's algorithm, smallest file position first.
  std::vector<std::vector<std::size_t>> after(nodes.size());
  std::vector<int> waiting(nodes.size(), 0);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::uint64_t d : nodes[i].data_deps()) {
      after[index.at(d)].push_back(i);
      ++waiting[i];
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    r.nodes.push_back(nodes[i]);
    for (std::size_t j : after[i]) {
      if (--waiting[j] == 0) ready.push(j);
    }
  }
  if (r.nodes.size() != nodes.size()) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (waiting[i] > 0) {
        ChakraFail(t.name, NodeText(nodes[i]) + " is on a dependency cycle (or waits for one)",
                   ctrl_ordered
                       ? "in Chakra's PyTorch converter output ctrl_deps name a node's caller "
                         "(its parent operator), not an order; --ignore-ctrl-deps orders "
                         "nodes by their data_deps only"
                       : "");
      }
    }
  }
  return r;
}

std::optional<std::int64_t> IntAttr(const cf::Node& n, const std::string& name) {
  for (const cf::AttributeProto& a : n.attr()) {
    if (a.name() != name) continue;
    switch (a.value_case()) {
      case cf::AttributeProto::kInt32Val: return a.int32_val();
      case cf::AttributeProto::kInt64Val: return a.int64_val();
      case cf::AttributeProto::kUint32Val: return a.uint32_val();
      case cf::AttributeProto::kUint64Val:
        return static_cast<std::int64_t>(std::min<std::uint64_t>(
            a.uint64_val(), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<bool> BoolAttr(const cf::Node& n, const std::string& name) {
  for (const cf::AttributeProto& a : n.attr()) {
    if (a.name() == name && a.value_case() == cf::AttributeProto::kBoolVal) return a.bool_val();
  }
  return std::nullopt;
}

std::optional<std::string> StringAttr(const cf::Node& n, const std::string& name) {
  for (const cf::AttributeProto& a : n.attr()) {
    if (a.name() == name && a.value_case() == cf::AttributeProto::kStringVal) return a.string_val();
    if (a.name() == name && a.value_case() != cf::AttributeProto::VALUE_NOT_SET) {
      // Some writers give a group's name as a number.
      if (const std::optional<std::int64_t> v = IntAttr(n, name)) return std::to_string(*v);
    }
  }
  return std::nullopt;
}

}  // namespace dtsim::plan

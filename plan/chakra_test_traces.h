// For tests: Chakra traces written as Chakra's own tools write them (one
// GlobalMetadata message, then Node messages, each preceded by its length as
// a varint), from the schema dtsim reads (plan/chakra_et.proto).
#pragma once

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "plan/chakra_et.pb.h"
#include "plan/chakra_import.h"

namespace dtsim::plan::chakra_test {

namespace cf = dtsim::chakra_format;

// Appends `m`, preceded by its length as a varint, to `out`.
inline void AppendDelimited(const google::protobuf::MessageLite& m, std::string* out) {
  google::protobuf::io::StringOutputStream raw(out);
  google::protobuf::io::CodedOutputStream coded(&raw);
  coded.WriteVarint32(static_cast<std::uint32_t>(m.ByteSizeLong()));
  m.SerializeToCodedStream(&coded);
}

inline void SetInt(cf::Node* n, const std::string& name, std::int64_t v) {
  cf::AttributeProto* a = n->add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}

// One rank's trace: nodes named "n<id>", written in the order added.
class TraceWriter {
 public:
  cf::Node* Node(std::uint64_t id, cf::NodeType type, std::vector<std::uint64_t> deps = {}) {
    cf::Node* n = &nodes_.emplace_back();
    n->set_id(id);
    std::string name = "n";  // appended: GCC 12 warns falsely on "n" + std::to_string
    name += std::to_string(id);
    n->set_name(name);
    n->set_type(type);
    for (std::uint64_t d : deps) n->add_data_deps(d);
    return n;
  }
  cf::Node* Compute(std::uint64_t id, std::uint64_t micros, std::vector<std::uint64_t> deps = {}) {
    cf::Node* n = Node(id, cf::COMP_NODE, std::move(deps));
    n->set_duration_micros(micros);
    return n;
  }
  cf::Node* AllReduce(std::uint64_t id, std::int64_t bytes, std::vector<std::uint64_t> deps = {}) {
    cf::Node* n = Node(id, cf::COMM_COLL_NODE, std::move(deps));
    SetInt(n, "comm_type", cf::ALL_REDUCE);
    SetInt(n, "comm_size", bytes);
    return n;
  }
  std::string Bytes() const {
    std::string bytes;
    cf::GlobalMetadata meta;
    meta.set_version("0.0.4");
    AppendDelimited(meta, &bytes);
    for (const cf::Node& n : nodes_) AppendDelimited(n, &bytes);
    return bytes;
  }
  ChakraTrace Finish(const std::string& name) const { return {name, Bytes()}; }

 private:
  std::deque<cf::Node> nodes_;  // stable addresses for the pointers handed out
};

}  // namespace dtsim::plan::chakra_test

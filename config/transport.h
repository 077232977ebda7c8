// How messages between ranks travel beyond the wire: the
// scenario keys cluster.network.transport (between nodes) and
// cluster.network.intra_node_transport (between the devices of a node),
// docs/scenario.md, "Transports".
//
// A transport turns a link of the catalog into what a message sees:
//
//   seconds(bytes) = latency + per_message
//                  + bytes / (bandwidth x efficiency)     the wire, less headers
//                  + bytes x copies / copy_bandwidth      host copies not overlapped
//                                                         with the wire (serialisation)
//
// MakeNetworkSpec (sim/simulator.h) folds a transport into the link's
// effective bandwidth and latency (EffectiveLink), so both engines, the
// collectives and parameter-server and pipeline transfers all pay it.
#pragma once

#include <string>
#include <vector>

#include "common/yaml_reader.h"

namespace dtsim::config {

struct TransportProfile {
  std::string name = "native";  // "native": the link as the catalog gives it
  std::string source;           // where the constants come from
  // Fixed host time per message (system calls, framing, waking the
  // receiver), both ends together; added to every transfer and to every
  // step of a collective.
  double per_message_s = 0;
  // Share of the link's bandwidth that carries payload (protocol headers
  // take the rest), in (0, 1].
  double efficiency = 1;
  // Full copies of each message made before sending or after receiving and
  // not overlapped with the wire (serialising into a protobuf, parsing it
  // back), all ends together, and the host's copy rate for them.
  double copies = 0;
  double copy_bandwidth_bytes_per_s = 10e9;

  bool IsNative() const { return per_message_s == 0 && efficiency == 1 && copies == 0; }
};

// The built-in transports, in a fixed order: native, tcp, mpi-tcp, grpc.
const std::vector<TransportProfile>& BuiltInTransports();
// By name (case-insensitive); nullptr when unknown.
const TransportProfile* FindTransport(const std::string& name);

// A transport: a built-in name or a mapping {base: NAME, per_message,
// efficiency, copies, copy_bandwidth}. Throws UserError at the value.
TransportProfile ReadTransport(const YamlValue& v);

// A link under a transport. `copy_streams`: how many processes copy in
// parallel through this link (the devices of a node behind one NIC), each
// at the transport's copy_bandwidth.
struct EffectiveLink {
  double bw_bytes_per_s = 0;
  double latency_s = 0;
};
EffectiveLink ApplyTransport(double bw_bytes_per_s, double latency_s, const TransportProfile& t,
                             int copy_streams = 1);

// "grpc (per message 35 us, efficiency 0.941, 2 copies at 10 GB/s)".
std::string DescribeTransport(const TransportProfile& t);

}  // namespace dtsim::config

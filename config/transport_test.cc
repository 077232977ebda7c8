// Transports: built-ins, the scenario keys cluster.network.transport and
// cluster.network.intra_node_transport, overrides, errors, and the link a
// transport makes (closed forms of config/transport.h's formula).
#include "config/transport.h"

#include <gtest/gtest.h>

#include "config/loader_test_util.h"

namespace dtsim::config {
namespace {

Scenario ParseNetwork(const std::string& network_lines) {
  return ParseScenario("cluster:\n  network:\n" + network_lines, "test.yaml");
}

TEST(TransportTest, BuiltIns) {
  ASSERT_EQ(BuiltInTransports().size(), 3u);
  EXPECT_EQ(BuiltInTransports()[0].name, "native");
  EXPECT_TRUE(BuiltInTransports()[0].IsNative());
  const TransportProfile* mpi = FindTransport("MPI-TCP");  // case-insensitive
  ASSERT_NE(mpi, nullptr);
  // 1448 payload bytes per 1538 bytes of wire time at MTU 1500 (TCP/IPv4
  // with timestamps in an Ethernet frame with preamble and gap).
  EXPECT_DOUBLE_EQ(mpi->efficiency, 1448.0 / 1538.0);
  EXPECT_EQ(mpi->copies, 0);
  const TransportProfile* grpc = FindTransport("grpc");
  ASSERT_NE(grpc, nullptr);
  EXPECT_EQ(grpc->copies, 2);  // serialised by the sender, copied out by the receiver
  EXPECT_GT(grpc->per_message_s, mpi->per_message_s);
  EXPECT_EQ(FindTransport("rdma"), nullptr);
}

TEST(TransportTest, NativeLeavesTheLinkAlone) {
  const EffectiveLink e = ApplyTransport(12.5e9, 2e-6, *FindTransport("native"), 8);
  EXPECT_EQ(e.bw_bytes_per_s, 12.5e9);
  EXPECT_EQ(e.latency_s, 2e-6);
}

TEST(TransportTest, EffectiveLinkClosedForm) {
  TransportProfile t;
  t.per_message_s = 10e-6;
  t.efficiency = 0.5;
  t.copies = 2;
  t.copy_bandwidth_bytes_per_s = 4e9;
  // Seconds per byte: 1 / (1e9 x 0.5) + 2 / 4e9 = 2.5e-9, so 400 MB/s.
  EffectiveLink e = ApplyTransport(1e9, 1e-6, t);
  EXPECT_DOUBLE_EQ(e.bw_bytes_per_s, 4e8);
  EXPECT_DOUBLE_EQ(e.latency_s, 11e-6);
  // Two processes copy in parallel: 2e-9 + 2 / 8e9 = 2.25e-9.
  e = ApplyTransport(1e9, 1e-6, t, 2);
  EXPECT_DOUBLE_EQ(e.bw_bytes_per_s, 1 / 2.25e-9);
  // A link nothing is routed over stays at zero bandwidth.
  EXPECT_EQ(ApplyTransport(0, 0, t).bw_bytes_per_s, 0);
}

TEST(TransportTest, ScenarioKeys) {
  EXPECT_TRUE(ParseNetwork("    link: 10GbE\n").cluster.network.transport.IsNative());
  const Scenario s = ParseNetwork(
      "    transport: grpc\n"
      "    intra_node_transport: {base: mpi-tcp, per_message: 20us, copies: 1, "
      "copy_bandwidth: 5GB/s, efficiency: 0.9}\n");
  EXPECT_EQ(s.cluster.network.transport.name, "grpc");
  const TransportProfile& in = s.cluster.network.intra_node_transport;
  EXPECT_EQ(in.name, "mpi-tcp");
  EXPECT_DOUBLE_EQ(in.per_message_s, 20e-6);
  EXPECT_EQ(in.copies, 1);
  EXPECT_DOUBLE_EQ(in.copy_bandwidth_bytes_per_s, 5e9);
  EXPECT_DOUBLE_EQ(in.efficiency, 0.9);
  EXPECT_NE(in.source.find("overridden"), std::string::npos);
}

TEST(TransportTest, MistakesAreLocated) {
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    transport: rdma\n", 3, "unknown transport"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    transport: {per_message: 1us}\n", 3, "base"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    transport: {base: grpc, efficiency: 1.5}\n", 3,
                      "(0, 1]"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    transport: {base: grpc, copies: -1}\n", 3,
                      "copies"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    transport: {base: grpc, copy_bandwidth: 0GB/s}\n",
                      3, "copy bandwidth"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    transport: {base: grpc, per_message: 5}\n", 3,
                      "unit"));
  EXPECT_TRUE(FailsAt("cluster:\n  network:\n    transport: {base: grpc, zero_copy: true}\n", 3,
                      "zero_copy"));
}

TEST(TransportTest, Describe) {
  EXPECT_EQ(DescribeTransport(*FindTransport("native")), "native");
  const std::string d = DescribeTransport(*FindTransport("grpc"));
  EXPECT_NE(d.find("grpc (per message"), std::string::npos) << d;
  EXPECT_NE(d.find("2 copies"), std::string::npos) << d;
}

}  // namespace
}  // namespace dtsim::config

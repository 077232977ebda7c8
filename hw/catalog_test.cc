#include "hw/catalog.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "hw/catalog_internal.h"

namespace dtsim::hw {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;  // bytes

const DeviceSpec& Device(const HardwareCatalog& catalog, const std::string& name) {
  const DeviceSpec* spec = catalog.FindDevice(name);
  if (spec == nullptr) throw std::runtime_error("no device " + name);
  return *spec;
}

const LinkSpec& Link(const HardwareCatalog& catalog, const std::string& name) {
  const LinkSpec* spec = catalog.FindLink(name);
  if (spec == nullptr) throw std::runtime_error("no link " + name);
  return *spec;
}

TEST(Catalog, EveryBuiltInDeviceIsCompleteAndSourced) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  ASSERT_GE(catalog.devices().size(), 20u);
  for (const DeviceSpec& d : catalog.devices()) {
    SCOPED_TRACE(d.name);
    EXPECT_EQ(d.Problem(), "");
    // Built-ins are GPUs plus the parameter-server host CPU.
    EXPECT_EQ(d.kind, d.name == "cpu-host" ? "cpu" : "gpu");
    EXPECT_GT(d.fp32_flop_per_s, 0);
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GT(d.memory_bw_bytes_per_s, 0);
    EXPECT_FALSE(d.source.empty());
    // Reduced precisions are never slower than fp32 where the GPU has them
    // (0 = absent).
    for (double rate : {d.tf32_flop_per_s, d.fp16_flop_per_s, d.bf16_flop_per_s}) {
      EXPECT_TRUE(rate == 0 || rate >= d.fp32_flop_per_s) << rate;
    }
    // The name finds this very entry, not another one.
    EXPECT_EQ(catalog.FindDevice(d.name), &d);
  }
}

TEST(Catalog, EveryBuiltInLinkIsCompleteAndSourced) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  ASSERT_GE(catalog.links().size(), 20u);
  for (const LinkSpec& l : catalog.links()) {
    SCOPED_TRACE(l.name);
    EXPECT_EQ(l.Problem(), "");
    EXPECT_GT(l.bw_bytes_per_s, 0);
    EXPECT_GT(l.latency_s, 0);
    EXPECT_FALSE(l.source.empty());
    EXPECT_EQ(catalog.FindLink(l.name), &l);
  }
}

TEST(Catalog, EveryAliasResolves) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  for (const auto& a : catalog.device_aliases()) {
    const DeviceSpec* d = catalog.FindDevice(a.alias);
    ASSERT_NE(d, nullptr) << a.alias;
    EXPECT_EQ(d->name, a.target);
  }
  for (const auto& a : catalog.link_aliases()) {
    const LinkSpec* l = catalog.FindLink(a.alias);
    ASSERT_NE(l, nullptr) << a.alias;
    EXPECT_EQ(l->name, a.target);
  }
}

// NVIDIA V100 Tensor Core GPU datasheet (2020), SXM2 column:
// 15.7 TFLOPS fp32, 125 TFLOPS tensor, 32 GB HBM2, 900 GB/s.
TEST(Catalog, V100MatchesDatasheet) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  const DeviceSpec& v100 = Device(catalog, "V100-SXM2-32GB");
  EXPECT_DOUBLE_EQ(v100.fp32_flop_per_s, 15.7e12);
  EXPECT_DOUBLE_EQ(v100.fp16_flop_per_s, 125e12);
  EXPECT_DOUBLE_EQ(v100.tf32_flop_per_s, 0);
  EXPECT_DOUBLE_EQ(v100.bf16_flop_per_s, 0);
  EXPECT_DOUBLE_EQ(v100.memory_bytes, 32 * kGiB);
  EXPECT_DOUBLE_EQ(v100.memory_bw_bytes_per_s, 900e9);
  // Same datasheet, PCIe column: 14 TFLOPS fp32, 112 TFLOPS tensor.
  EXPECT_DOUBLE_EQ(Device(catalog, "V100-PCIe-16GB").fp32_flop_per_s, 14e12);
  EXPECT_DOUBLE_EQ(Device(catalog, "V100-PCIe-16GB").fp16_flop_per_s, 112e12);
}

// NVIDIA A100 Tensor Core GPU datasheet (2021): 19.5 TFLOPS fp32; tensor tf32
// 156 and fp16/bf16 312 TFLOPS dense (312/624 "with sparsity"); 80GB SXM
// 2039 GB/s, 40GB 1555 GB/s.
TEST(Catalog, A100MatchesDatasheet) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  const DeviceSpec& a100 = Device(catalog, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(a100.fp32_flop_per_s, 19.5e12);
  EXPECT_DOUBLE_EQ(a100.tf32_flop_per_s, 156e12);
  EXPECT_DOUBLE_EQ(a100.fp16_flop_per_s, 312e12);
  EXPECT_DOUBLE_EQ(a100.bf16_flop_per_s, 312e12);
  EXPECT_DOUBLE_EQ(a100.memory_bytes, 80 * kGiB);
  EXPECT_DOUBLE_EQ(a100.memory_bw_bytes_per_s, 2039e9);
  EXPECT_DOUBLE_EQ(Device(catalog, "A100-SXM4-40GB").memory_bw_bytes_per_s, 1555e9);
  EXPECT_DOUBLE_EQ(Device(catalog, "A100-PCIe-80GB").memory_bw_bytes_per_s, 1935e9);
}

// NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), SXM5, dense:
//   fp16 = 132 SMs x 4096 flop/clock x 1830 MHz = 989.4 TFLOPS, tf32 half of
//   that, fp32 66.9 TFLOPS; H100 datasheet: 80 GB HBM3, 3.35 TB/s.
TEST(Catalog, H100MatchesWhitepaper) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  const DeviceSpec& h100 = Device(catalog, "H100-SXM");
  EXPECT_NEAR(h100.fp16_flop_per_s, 132 * 4096 * 1830e6, 0.1e12);
  EXPECT_DOUBLE_EQ(h100.fp16_flop_per_s, 989.4e12);
  EXPECT_DOUBLE_EQ(h100.bf16_flop_per_s, 989.4e12);
  EXPECT_DOUBLE_EQ(h100.tf32_flop_per_s, 494.7e12);
  EXPECT_DOUBLE_EQ(h100.fp32_flop_per_s, 66.9e12);
  EXPECT_DOUBLE_EQ(h100.memory_bytes, 80 * kGiB);
  EXPECT_DOUBLE_EQ(h100.memory_bw_bytes_per_s, 3.35e12);
  // NVIDIA H200 datasheet (2024): same compute, 141 GB HBM3e at 4.8 TB/s.
  const DeviceSpec& h200 = Device(catalog, "H200-SXM");
  EXPECT_DOUBLE_EQ(h200.fp16_flop_per_s, h100.fp16_flop_per_s);
  EXPECT_DOUBLE_EQ(h200.memory_bytes, 141 * kGiB);
  EXPECT_DOUBLE_EQ(h200.memory_bw_bytes_per_s, 4.8e12);
}

// NVIDIA Tesla K20/K20X datasheet (2012): K20 3.52 TFLOPS fp32, 5 GB, 208 GB/s.
// NVIDIA Tesla K80 datasheet (2014): board 8.73 TFLOPS (boost), 24 GB,
// 480 GB/s; one entry is one of its two GK210 dies: 2496 x 2 x 875 MHz.
TEST(Catalog, KeplerMatchesDatasheets) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  const DeviceSpec& k20 = Device(catalog, "K20m");
  EXPECT_DOUBLE_EQ(k20.fp32_flop_per_s, 3.52e12);
  EXPECT_DOUBLE_EQ(k20.fp16_flop_per_s, 0);
  EXPECT_DOUBLE_EQ(k20.memory_bytes, 5 * kGiB);
  EXPECT_DOUBLE_EQ(k20.memory_bw_bytes_per_s, 208e9);
  const DeviceSpec& k80 = Device(catalog, "K80");
  EXPECT_NEAR(k80.fp32_flop_per_s, 2496 * 2 * 875e6, 0.01e12);
  EXPECT_DOUBLE_EQ(k80.memory_bytes, 24 * kGiB / 2);
  EXPECT_DOUBLE_EQ(k80.memory_bw_bytes_per_s, 480e9 / 2);
}

// NVIDIA Tesla P100 datasheet (2016): fp16 (half2) is twice fp32, SXM2 10.6 /
// 21.2 TFLOPS. NVIDIA T4 datasheet (2019): 8.1 fp32, 65 mixed precision.
TEST(Catalog, PascalAndTuringMatchDatasheets) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  const DeviceSpec& p100 = Device(catalog, "P100-SXM2");
  EXPECT_DOUBLE_EQ(p100.fp32_flop_per_s, 10.6e12);
  EXPECT_DOUBLE_EQ(p100.fp16_flop_per_s, 2 * p100.fp32_flop_per_s);
  EXPECT_DOUBLE_EQ(p100.memory_bw_bytes_per_s, 732e9);
  const DeviceSpec& t4 = Device(catalog, "T4");
  EXPECT_DOUBLE_EQ(t4.fp32_flop_per_s, 8.1e12);
  EXPECT_DOUBLE_EQ(t4.fp16_flop_per_s, 65e12);
  EXPECT_DOUBLE_EQ(t4.memory_bw_bytes_per_s, 300e9);
  // GeForce GTX 1080 Ti specifications: 3584 cores x 2 x 1582 MHz, 11 GB.
  const DeviceSpec& gtx = Device(catalog, "GTX-1080Ti");
  EXPECT_DOUBLE_EQ(gtx.fp32_flop_per_s, 3584 * 2 * 1582e6);
  EXPECT_DOUBLE_EQ(gtx.memory_bytes, 11 * kGiB);
}

// PCIe 3.0: 8 GT/s x 16 lanes x 128/130 / 8 bits = 15.75 GB/s per direction;
// each PCIe generation doubles it. NVLink: links x 25 GB/s per direction
// (V100 6, A100 12, H100 18); P100 4 x 20 GB/s.
TEST(Catalog, LinksMatchSpecifications) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  EXPECT_DOUBLE_EQ(Link(catalog, "pcie3-x16").bw_bytes_per_s, 8e9 * 16 * 128 / 130 / 8);
  EXPECT_NEAR(Link(catalog, "pcie3-x16").bw_bytes_per_s, 15.75e9, 0.01e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "pcie4-x16").bw_bytes_per_s,
                   2 * Link(catalog, "pcie3-x16").bw_bytes_per_s);
  EXPECT_DOUBLE_EQ(Link(catalog, "pcie5-x16").bw_bytes_per_s,
                   4 * Link(catalog, "pcie3-x16").bw_bytes_per_s);
  EXPECT_DOUBLE_EQ(Link(catalog, "nvlink1").bw_bytes_per_s, 80e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "nvlink2").bw_bytes_per_s, 150e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "nvlink3").bw_bytes_per_s, 300e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "nvlink4").bw_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "nvswitch-a100").bw_bytes_per_s, 300e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "nvswitch-h100").bw_bytes_per_s, 450e9);
  // Ethernet and InfiniBand: data rate in Gb/s / 8.
  EXPECT_DOUBLE_EQ(Link(catalog, "1GbE").bw_bytes_per_s, 125e6);
  EXPECT_DOUBLE_EQ(Link(catalog, "100GbE").bw_bytes_per_s, 12.5e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "ib-edr").bw_bytes_per_s, 12.5e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "ib-hdr").bw_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(Link(catalog, "ib-ndr").bw_bytes_per_s, 50e9);
  // Latency order: NVLink < PCIe < InfiniBand < RoCE < TCP.
  EXPECT_LT(Link(catalog, "nvlink3").latency_s, Link(catalog, "pcie4-x16").latency_s);
  EXPECT_LE(Link(catalog, "pcie4-x16").latency_s, Link(catalog, "ib-hdr").latency_s);
  EXPECT_LT(Link(catalog, "ib-hdr").latency_s, Link(catalog, "100GbE-RoCE").latency_s);
  EXPECT_LT(Link(catalog, "100GbE-RoCE").latency_s, Link(catalog, "100GbE").latency_s);
}

TEST(Catalog, LookupIgnoresCaseAndKnowsAliases) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  EXPECT_EQ(catalog.FindDevice("a100-sxm4-80gb"), catalog.FindDevice("A100-SXM4-80GB"));
  EXPECT_EQ(catalog.FindDevice("k20M"), catalog.FindDevice("K20m"));
  EXPECT_EQ(Device(catalog, "v100").name, "V100-SXM2-32GB");
  EXPECT_EQ(Device(catalog, "A100").name, "A100-SXM4-80GB");
  EXPECT_EQ(Device(catalog, "H100").name, "H100-SXM");
  EXPECT_EQ(Link(catalog, "100gbe").name, "100GbE");
  EXPECT_EQ(Link(catalog, "PCIE3-X16").name, "pcie3-x16");
  EXPECT_EQ(Link(catalog, "HDR").name, "ib-hdr");
  EXPECT_EQ(catalog.FindDevice("V100-SXM3"), nullptr);
  EXPECT_EQ(catalog.FindDevice(""), nullptr);
  EXPECT_EQ(catalog.FindLink("nvlink5"), nullptr);
}

TEST(Catalog, AddDeviceReplacesSameNameIgnoringCase) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  size_t count = catalog.devices().size();
  DeviceSpec slow = Device(catalog, "V100-SXM2-32GB");
  slow.name = "v100-sxm2-32gb";
  slow.fp32_flop_per_s = 1e12;
  catalog.AddDevice(slow);
  EXPECT_EQ(catalog.devices().size(), count);
  EXPECT_DOUBLE_EQ(Device(catalog, "V100-SXM2-32GB").fp32_flop_per_s, 1e12);
  EXPECT_DOUBLE_EQ(Device(catalog, "v100").fp32_flop_per_s, 1e12);  // alias follows

  DeviceSpec custom = slow;
  custom.name = "my-accel";
  catalog.AddDevice(custom);
  EXPECT_EQ(catalog.devices().size(), count + 1);
  EXPECT_EQ(Device(catalog, "MY-ACCEL").name, "my-accel");

  // An entry's name wins over an alias of the same spelling.
  custom.name = "a100";
  catalog.AddDevice(custom);
  EXPECT_EQ(Device(catalog, "A100").name, "a100");
}

TEST(Catalog, AddLinkReplacesSameName) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  size_t count = catalog.links().size();
  catalog.AddLink(LinkSpec{"100GBE", 10e9, 5e-6, "measured"});
  EXPECT_EQ(catalog.links().size(), count);
  EXPECT_DOUBLE_EQ(Link(catalog, "100GbE").bw_bytes_per_s, 10e9);
  EXPECT_EQ(Link(catalog, "100GbE").source, "measured");
}

TEST(Catalog, BuiltInReturnsIndependentCopies) {
  HardwareCatalog a = HardwareCatalog::BuiltIn();
  DeviceSpec changed = Device(a, "T4");
  changed.fp32_flop_per_s = 1;
  a.AddDevice(changed);
  EXPECT_DOUBLE_EQ(Device(HardwareCatalog::BuiltIn(), "T4").fp32_flop_per_s, 8.1e12);
}

TEST(Catalog, InvalidEntriesAreInternalErrors) {
  HardwareCatalog catalog;
  DeviceSpec no_fp32;
  no_fp32.name = "x";
  no_fp32.memory_bytes = 1;
  no_fp32.memory_bw_bytes_per_s = 1;
  EXPECT_NE(no_fp32.Problem().find("fp32_flop_per_s must be > 0"), std::string::npos);
  EXPECT_THROW(catalog.AddDevice(no_fp32), InternalError);
  EXPECT_THROW(catalog.AddLink(LinkSpec{"l", 0, 1e-6, ""}), InternalError);
  EXPECT_THROW(catalog.AddDeviceAlias("y", "missing"), InternalError);
  EXPECT_TRUE(catalog.devices().empty());

  DeviceSpec bad_kind = Device(HardwareCatalog::BuiltIn(), "T4");
  bad_kind.kind = "tpu";
  EXPECT_NE(bad_kind.Problem().find("kind"), std::string::npos);
  LinkSpec negative_latency{"l", 1e9, -1, ""};
  EXPECT_NE(negative_latency.Problem().find("latency_s must be >= 0"), std::string::npos);
}

TEST(Catalog, EqualsIgnoreCase) {
  EXPECT_TRUE(internal::EqualsIgnoreCase("GbE", "gbE"));
  EXPECT_FALSE(internal::EqualsIgnoreCase("GbE", "GbE2"));
  EXPECT_TRUE(internal::EqualsIgnoreCase("", ""));
}

}  // namespace
}  // namespace dtsim::hw

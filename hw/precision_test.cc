#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "hw/catalog.h"

namespace dtsim::hw {
namespace {

TEST(Precision, NamesRoundTripIgnoringCase) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16,
                      Precision::kFp8}) {
    EXPECT_EQ(ParsePrecision(PrecisionName(p)), p);
  }
  EXPECT_STREQ(PrecisionName(Precision::kBf16), "bf16");
  EXPECT_EQ(ParsePrecision("FP16"), Precision::kFp16);
  EXPECT_EQ(ParsePrecision("Tf32"), Precision::kTf32);
}

TEST(Precision, UnknownNameIsUserErrorListingNames) {
  EXPECT_THROW(ParsePrecision("fp4"), UserError);
  EXPECT_THROW(ParsePrecision(""), UserError);
  try {
    ParsePrecision("half", {"scenario.yaml", 4, 14});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().line, 4);
    EXPECT_NE(e.message().find("'half'"), std::string::npos) << e.what();
    EXPECT_EQ(e.hint(), "use one of: fp32, tf32, fp16, bf16, fp8");
    EXPECT_NE(std::string(e.what()).find("scenario.yaml:4:14"), std::string::npos);
  }
}

// Fallbacks documented in hw/catalog.h: a precision the device lacks (rate 0)
// runs at the fp32 rate.
TEST(Precision, PeakFlopRateFallsBackToFp32) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  const DeviceSpec& k20 = *catalog.FindDevice("K20m");  // no fp16/bf16/tf32 hardware
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
    EXPECT_DOUBLE_EQ(k20.PeakFlopRate(p), 3.52e12) << PrecisionName(p);
  }
  const DeviceSpec& v100 = *catalog.FindDevice("V100-SXM2-32GB");  // fp16 tensor cores only
  EXPECT_DOUBLE_EQ(v100.PeakFlopRate(Precision::kFp16), 125e12);
  EXPECT_DOUBLE_EQ(v100.PeakFlopRate(Precision::kTf32), 15.7e12);
  EXPECT_DOUBLE_EQ(v100.PeakFlopRate(Precision::kBf16), 15.7e12);
  const DeviceSpec& a100 = *catalog.FindDevice("A100-SXM4-40GB");  // all four
  EXPECT_DOUBLE_EQ(a100.PeakFlopRate(Precision::kFp32), 19.5e12);
  EXPECT_DOUBLE_EQ(a100.PeakFlopRate(Precision::kTf32), 156e12);
  EXPECT_DOUBLE_EQ(a100.PeakFlopRate(Precision::kFp16), 312e12);
  EXPECT_DOUBLE_EQ(a100.PeakFlopRate(Precision::kBf16), 312e12);
}

// fp8 trains with 16-bit weights and fp32 masters like fp16 and bf16.
TEST(Precision, Fp8IsMixedPrecision) {
  EXPECT_TRUE(IsMixedPrecision(Precision::kFp8));
  EXPECT_TRUE(IsMixedPrecision(Precision::kBf16));
  EXPECT_FALSE(IsMixedPrecision(Precision::kTf32));
  EXPECT_FALSE(IsMixedPrecision(Precision::kFp32));
}

// Dense FP8 rates of the Hopper whitepaper (2022): SXM5 1978.9 TFLOPS (3958
// with sparsity), PCIe 1513 (3026); H200 is the H100 SXM5 die. Earlier GPUs
// have no FP8 tensor cores.
TEST(Precision, Fp8RatesAreHoppersAndNoneBefore) {
  HardwareCatalog catalog = HardwareCatalog::BuiltIn();
  EXPECT_DOUBLE_EQ(catalog.FindDevice("H100-SXM")->PeakFlopRate(Precision::kFp8), 1978.9e12);
  EXPECT_DOUBLE_EQ(catalog.FindDevice("H200-SXM")->PeakFlopRate(Precision::kFp8), 1978.9e12);
  EXPECT_DOUBLE_EQ(catalog.FindDevice("H100-PCIe")->PeakFlopRate(Precision::kFp8), 1513e12);
  for (const DeviceSpec& d : catalog.devices())
    EXPECT_EQ(d.HasFp8(), d.arch == GpuArch::kHopper) << d.name;
}

TEST(Precision, PeakFlopRateWithoutFp32IsInternalError) {
  DeviceSpec empty;
  empty.name = "empty";
  empty.fp16_flop_per_s = 1e12;
  EXPECT_THROW(empty.PeakFlopRate(Precision::kFp16), InternalError);
}

}  // namespace
}  // namespace dtsim::hw

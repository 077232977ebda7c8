#include "common/units.h"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

// Expected values are the SI/IEC definitions of the units.
TEST(Units, ParsesBandwidthInBitsAndBytes) {
  EXPECT_DOUBLE_EQ(ParseQuantity("25Gbps", Dimension::kBandwidth), 25e9 / 8);
  EXPECT_DOUBLE_EQ(ParseQuantity("100 Gb/s", Dimension::kBandwidth), 100e9 / 8);
  EXPECT_DOUBLE_EQ(ParseQuantity("300GBps", Dimension::kBandwidth), 300e9);
  EXPECT_DOUBLE_EQ(ParseQuantity("1.5 GB/s", Dimension::kBandwidth), 1.5e9);
}

TEST(Units, ParsesSizesTimesAndRates) {
  EXPECT_DOUBLE_EQ(ParseQuantity("16GiB", Dimension::kBytes), 16.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(ParseQuantity("25MB", Dimension::kBytes), 25e6);
  EXPECT_DOUBLE_EQ(ParseQuantity("5us", Dimension::kTime), 5e-6);
  EXPECT_DOUBLE_EQ(ParseQuantity("1.5ms", Dimension::kTime), 1.5e-3);
  EXPECT_DOUBLE_EQ(ParseQuantity("125TFLOPS", Dimension::kFlopRate), 125e12);
  EXPECT_DOUBLE_EQ(ParseQuantity("0", Dimension::kTime), 0.0);
}

TEST(Units, RejectsMissingUnitWithHint) {
  try {
    ParseQuantity("25", Dimension::kBandwidth, {"a.yaml", 3, 7});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.where().line, 3);
    EXPECT_NE(e.message().find("has no unit"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("Gbps"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a.yaml:3:7"), std::string::npos);
  }
}

TEST(Units, RejectsUnknownUnitNegativeAndGarbage) {
  EXPECT_THROW(ParseQuantity("25Gbit", Dimension::kBandwidth), UserError);
  EXPECT_THROW(ParseQuantity("-5Gbps", Dimension::kBandwidth), UserError);
  EXPECT_THROW(ParseQuantity("fast", Dimension::kBandwidth), UserError);
  EXPECT_THROW(ParseQuantity("5 us extra", Dimension::kTime), UserError);
  EXPECT_THROW(ParseQuantity("16GiB", Dimension::kTime), UserError);
}

TEST(Units, FormatsForPeople) {
  EXPECT_EQ(FormatBytes(25.6e6), "25.6 MB");
  EXPECT_EQ(FormatBandwidth(12.5e9), "12.5 GB/s");
  EXPECT_EQ(FormatSeconds(1.25e-3), "1.25 ms");
  EXPECT_EQ(FormatSeconds(300), "5 min");
  EXPECT_EQ(FormatSeconds(720 * 3600.0), "720 h");
  EXPECT_EQ(SecondsToNs(1.5e-6), 1500);
}

}  // namespace
}  // namespace dtsim

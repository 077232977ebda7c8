#include "report/tensorboard.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "report/tensorboard_event.pb.h"

namespace dtsim::report {
namespace {

// CRC-32C computed bit by bit as the format's documentation defines it
// (RFC 3720 appendix B.4: reflected polynomial 0x82F63B78, initial value and
// final XOR all ones): independent of the table-driven code under test.
std::uint32_t ReferenceCrc32c(const std::string& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

std::uint64_t LittleEndian(const std::string& bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

// Reads a file as TensorBoard's reader does: each record's length and its
// masked CRC, then the data and its masked CRC; fails the test on any
// mismatch. Returns the records' data.
std::vector<std::string> ReadRecords(const std::string& file) {
  auto masked = [](const std::string& s) {
    const std::uint32_t crc = ReferenceCrc32c(s);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  };
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size());
    if (at + 12 > file.size()) break;
    const std::string header = file.substr(at, 8);
    EXPECT_EQ(LittleEndian(file, at + 8, 4), masked(header)) << "length CRC at " << at;
    const std::uint64_t length = LittleEndian(file, at, 8);
    EXPECT_LE(at + 12 + length + 4, file.size());
    if (at + 12 + length + 4 > file.size()) break;
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(LittleEndian(file, at + 12 + length, 4), masked(data)) << "data CRC at " << at;
    records.push_back(data);
    at += 12 + length + 4;
  }
  return records;
}

// The check value of CRC-32C, the CRC of the nine bytes "123456789", is
// 0xE3069283 (RFC 3720 B.4; the catalogue of parametrised CRCs).
TEST(TensorBoard, Crc32cHasItsCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(ReferenceCrc32c("123456789"), 0xE3069283u);
  const std::string text = "dtsim writes TensorBoard event files";
  EXPECT_EQ(Crc32c(text), ReferenceCrc32c(text));
}

TEST(TensorBoard, RecordsFrameEventsThatParseBack) {
  EventFile file(100.0);
  file.AddScalar("loss", 1, 101.5, 2.25f);
  file.AddScalar("rank_1/sec_per_batch", 2, 102.0, 0.5f);
  const std::vector<std::string> records = ReadRecords(file.bytes());
  ASSERT_EQ(records.size(), 3u);
  tensorboard::Event first, loss, rank;
  ASSERT_TRUE(first.ParseFromString(records[0]));
  EXPECT_EQ(first.file_version(), "brain.Event:2");
  EXPECT_EQ(first.wall_time(), 100.0);
  ASSERT_TRUE(loss.ParseFromString(records[1]));
  EXPECT_EQ(loss.step(), 1);
  EXPECT_EQ(loss.wall_time(), 101.5);
  ASSERT_EQ(loss.summary().value_size(), 1);
  EXPECT_EQ(loss.summary().value(0).tag(), "loss");
  EXPECT_EQ(loss.summary().value(0).simple_value(), 2.25f);
  ASSERT_TRUE(rank.ParseFromString(records[2]));
  EXPECT_EQ(rank.summary().value(0).tag(), "rank_1/sec_per_batch");
  EXPECT_EQ(rank.step(), 2);
}

// The wire bytes of TensorFlow's schema, by hand: an Event with step 7 and a
// summary value tagged "a" of 1.0 is field 2 varint 7 (0x10 0x07) then field
// 5 length-delimited (0x2a, 10 bytes): Summary field 1 (0x0a, 8 bytes):
// Value tag field 1 "a" (0x0a 0x01 0x61, 3 bytes), simple_value field 2
// fixed32 (0x15, then 1.0f little-endian 00 00 80 3f, 5 bytes). wall_time 0 is not written
// (proto3 default).
TEST(TensorBoard, EventsUseTensorFlowsFieldNumbers) {
  EventFile file;
  file.AddScalar("a", 7, 0.0, 1.0f);
  const std::vector<std::string> records = ReadRecords(file.bytes());
  ASSERT_EQ(records.size(), 2u);
  const std::string expected("\x10\x07\x2a\x0a\x0a\x08\x0a\x01\x61\x15\x00\x00\x80\x3f", 14);
  EXPECT_EQ(records[1], expected);
}

}  // namespace
}  // namespace dtsim::report

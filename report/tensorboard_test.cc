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

// Issue 15 item 4: sweep axes as TensorBoard HParams. The session-end
// record, encoded by hand from the wire format (protobuf encoding guide)
// with the field numbers of TensorFlow's summary.proto / tensor.proto and
// TensorBoard's plugin_data.proto, as tensorboard.plugins.hparams.summary
// writes it.
TEST(TensorBoard, HParamsSessionEndBytes) {
  EventFile file;
  file.AddHParamsSessionEnd(true, 0);
  const std::vector<std::string> records = ReadRecords(file.bytes());
  ASSERT_EQ(records.size(), 2u);
  // HParamsPluginData: version 0 (not written), session_end_info = 4
  // {status = 1: STATUS_SUCCESS}.
  const std::string content("\x22\x02\x08\x01", 4);
  // PluginData {plugin_name = 1 "hparams", content = 2}: 15 bytes.
  const std::string plugin = std::string("\x0a\x07hparams\x12\x04", 11) + content;
  // SummaryMetadata {plugin_data = 1}: 17 bytes.
  const std::string metadata = std::string("\x0a\x0f", 2) + plugin;
  // TensorProto {dtype = 1: DT_FLOAT, tensor_shape = 2 {dim = 2 {size 0}}}:
  // TensorBoard's NULL_TENSOR, "6 bytes".
  const std::string tensor("\x08\x01\x12\x02\x12\x00", 6);
  // Summary.Value {tag = 1, tensor = 8, metadata = 9}, in field order: 55 bytes.
  const std::string value = std::string("\x0a\x1a_hparams_/session_end_info\x42\x06", 30) +
                            tensor + std::string("\x4a\x11", 2) + metadata;
  ASSERT_EQ(value.size(), 55u);
  // Event {summary = 5 {value = 1}}: wall time and step 0 are not written.
  const std::string event = std::string("\x2a\x39\x0a\x37", 4) + value;
  EXPECT_EQ(records[1], event);
}

// An experiment and a session parse back: names, kinds, domains, values;
// a session leaves out an axis it does not use. Map entries come out in key
// order, so the bytes do not depend on the process.
TEST(TensorBoard, HParamsExperimentAndSessionParseBack) {
  const std::vector<EventFile::HParam> hparams = {
      {"cluster.nodes", {"1", "2", "4"}, true},
      {"parallelism.strategy", {"data", "local_sgd"}, false},
      {"parallelism.averaging_period", {"10", "20"}, true}};
  EventFile experiment;
  experiment.AddHParamsExperiment(hparams, {"throughput_samples_per_s"}, 0);
  std::vector<std::string> records = ReadRecords(experiment.bytes());
  ASSERT_EQ(records.size(), 2u);
  tensorboard::Event e;
  ASSERT_TRUE(e.ParseFromString(records[1]));
  ASSERT_EQ(e.summary().value_size(), 1);
  EXPECT_EQ(e.summary().value(0).tag(), "_hparams_/experiment");
  EXPECT_EQ(e.summary().value(0).metadata().plugin_data().plugin_name(), "hparams");
  tensorboard::HParamsPluginData data;
  ASSERT_TRUE(data.ParseFromString(e.summary().value(0).metadata().plugin_data().content()));
  ASSERT_TRUE(data.has_experiment());
  ASSERT_EQ(data.experiment().hparam_infos_size(), 3);
  EXPECT_EQ(data.experiment().hparam_infos(0).type(), 3);  // DATA_TYPE_FLOAT64
  EXPECT_EQ(data.experiment().hparam_infos(1).type(), 1);  // DATA_TYPE_STRING
  EXPECT_EQ(data.experiment().hparam_infos(0).domain_discrete().values(2).number_value(), 4);
  EXPECT_EQ(data.experiment().hparam_infos(1).domain_discrete().values(1).string_value(),
            "local_sgd");
  EXPECT_EQ(data.experiment().metric_infos(0).name().tag(), "throughput_samples_per_s");

  EventFile session;
  session.AddHParamsSessionStart(hparams, {2, 0, 2}, 0);  // data: no averaging period
  records = ReadRecords(session.bytes());
  ASSERT_TRUE(e.ParseFromString(records[1]));
  EXPECT_EQ(e.summary().value(0).tag(), "_hparams_/session_start_info");
  ASSERT_TRUE(data.ParseFromString(e.summary().value(0).metadata().plugin_data().content()));
  const auto& values = data.session_start_info().hparams();
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values.at("cluster.nodes").number_value(), 4);
  EXPECT_EQ(values.at("parallelism.strategy").string_value(), "data");
  EXPECT_EQ(values.count("parallelism.averaging_period"), 0u);
  // Deterministic: entries in key order ("cluster.nodes" < "parallelism...").
  const std::string content = e.summary().value(0).metadata().plugin_data().content();
  EXPECT_LT(content.find("cluster.nodes"), content.find("parallelism.strategy"));
}

}  // namespace
}  // namespace dtsim::report

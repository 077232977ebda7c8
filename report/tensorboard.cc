#include "report/tensorboard.h"

#include <boost/crc.hpp>

#include "report/tensorboard_event.pb.h"

namespace dtsim::report {
namespace {

void PutLittleEndian(std::string* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::uint32_t Crc32c(std::string_view data) {
  // Width 32, polynomial 0x1EDC6F41, initial and final XOR all ones,
  // reflected in and out: CRC-32C.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

std::uint32_t MaskedCrc32c(std::string_view data) {
  const std::uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

EventFile::EventFile(double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  AddRecord(event.SerializeAsString());
}

void EventFile::AddScalar(const std::string& tag, std::int64_t step, double wall_time,
                          float value) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  AddRecord(event.SerializeAsString());
}

void EventFile::AddRecord(const std::string& data) {
  std::string header;
  PutLittleEndian(&header, data.size(), 8);
  bytes_ += header;
  PutLittleEndian(&bytes_, MaskedCrc32c(header), 4);
  bytes_ += data;
  PutLittleEndian(&bytes_, MaskedCrc32c(data), 4);
}

}  // namespace dtsim::report

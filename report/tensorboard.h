// Event files that TensorBoard reads (`tensorboard --logdir DIR`): scalars
// per step, in TensorFlow's record format. A file is a sequence of records
//
//   uint64 length, uint32 masked CRC32C of those 8 bytes,
//   `length` bytes of a serialized Event (report/tensorboard_event.proto),
//   uint32 masked CRC32C of them,
//
// integers little-endian, the mask ((crc >> 15) | (crc << 17)) + 0xa282ead8
// (TensorFlow's tensorflow/core/lib/hash/crc32c.h; TFRecord format in the
// TensorFlow guide "TFRecord and tf.train.Example"). The first record holds
// file_version "brain.Event:2". TensorBoard finds a file by "tfevents" in
// its name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dtsim::report {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `data`, and the
// masked form the records carry.
std::uint32_t Crc32c(std::string_view data);
std::uint32_t MaskedCrc32c(std::string_view data);

// The name dtsim gives its event files (one per output folder).
inline constexpr const char* kEventFileName = "events.out.tfevents.dtsim";

class EventFile {
 public:
  // Starts the file with its version record at `wall_time`.
  explicit EventFile(double wall_time = 0);

  // One scalar: `tag` (a '/' groups charts, e.g. "rank_1/sec_per_batch")
  // at `step`, written at `wall_time` seconds (since the epoch, or any
  // origin the writer states).
  void AddScalar(const std::string& tag, std::int64_t step, double wall_time, float value);

  // The file's bytes so far.
  const std::string& bytes() const { return bytes_; }

 private:
  void AddRecord(const std::string& data);
  std::string bytes_;
};

}  // namespace dtsim::report

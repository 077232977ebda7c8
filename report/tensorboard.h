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
#include <vector>

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

  // TensorBoard's HParams plugin (tensorboard/plugins/hparams): these
  // records, each a summary of an empty float tensor whose metadata names
  // the plugin and holds an HParamsPluginData message, make the HParams
  // dashboard list each run (folder) of an experiment as a session with its
  // hyper-parameter values and metrics.
  //
  // The experiment, in the top folder's file: its hyper-parameters (name
  // and the values it takes: numbers or strings) and its metrics (scalar
  // tags the sessions write).
  struct HParam {
    std::string name;
    std::vector<std::string> values;  // as written in the sweep
    bool numeric = false;             // every value a number: a float64 hparam
  };
  void AddHParamsExperiment(const std::vector<HParam>& hparams,
                            const std::vector<std::string>& metric_tags, double wall_time);
  // A session's start, in its own folder's file: its value of each
  // hyper-parameter, values[choice[a]] (numbers where `numeric`, else
  // strings); a choice past the values leaves that hyper-parameter out.
  void AddHParamsSessionStart(const std::vector<HParam>& hparams,
                              const std::vector<std::size_t>& choice, double wall_time);
  // Its end: success, or failure (an infeasible plan).
  void AddHParamsSessionEnd(bool success, double wall_time);

  // The file's bytes so far.
  const std::string& bytes() const { return bytes_; }

 private:
  void AddRecord(const std::string& data);
  std::string bytes_;
};

}  // namespace dtsim::report

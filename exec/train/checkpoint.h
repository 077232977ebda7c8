// Checkpoints: named float arrays (weights, optimizer moments) plus integer
// counters (seed, optimizer step count, data cursor), saved so that a crash
// at any moment leaves a loadable file.
//
// File format ("DTSIMCK1", version 1, all integers little-endian):
//
//   offset  size  field
//   0       8     magic "DTSIMCK1"
//   8       4     u32 version = 1
//   12      4     u32 CRC-32 (Boost crc_32_type, the zlib/PNG polynomial)
//                 of every byte from offset 16 to the end of the file
//   16      8     u64 P = payload bytes; the file is exactly 24 + P bytes
//   24      P     payload:
//                   i64 step
//                   u32 number of counters, then per counter (name order):
//                     u32 name length, name bytes, i64 value
//                   u32 number of tensors, then per tensor (name order):
//                     u32 name length, name bytes, u64 element count,
//                     count x f32 (IEEE-754)
//
// Atomicity: SaveCheckpoint writes "<path>.dtsim-tmp.<pid>.<6 random
// chars>" in the same directory, fsyncs it, renames it over <path> and
// fsyncs the directory. rename() replaces the name atomically, so <path> is
// always either the old complete file or the new complete file. A writer
// killed mid-save leaves only its temp file behind; loaders never read temp
// files, and the next successful save of the same path deletes temp files
// whose writer process no longer exists.
//
// Directory layout for "save every K steps, resume after a crash":
//   <dir>/ckpt-<step, 12 digits>.dtck, e.g. ckpt-000000001000.dtck
// SaveCheckpointToDir writes the next one and keeps the newest keep_last;
// LatestCheckpoint finds the one to resume from.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::exec {

struct Checkpoint {
  // Training step the state belongs to (the next step to run is step + 1
  // or step, as the training loop defines; dtsim stores it as given).
  std::int64_t step = 0;
  // Named float arrays, e.g. "conv1.weight", "conv1.weight.momentum".
  std::map<std::string, std::vector<float>> tensors;
  // Named integers, e.g. "seed", "optimizer_steps", "data_cursor".
  std::map<std::string, std::int64_t> counters;

  // Member-wise; floats compare by value (NaN != NaN).
  bool operator==(const Checkpoint&) const = default;
};

// Writes `checkpoint` to `path` atomically and durably (see the top of the
// file). REQUIRES: names shorter than 2^32 bytes, fewer than 2^32 tensors and
// counters. Throws UserError naming the file when the directory is missing
// or not writable, or the disk is full; <path> is then untouched and no
// temp file is left.
void SaveCheckpoint(const std::string& path, const Checkpoint& checkpoint);

struct LoadCheckpointOptions {
  // Refuse a tensor holding NaN or an infinity (default): training resumed
  // from it could only produce NaN losses. false reads the file's floats as
  // they are (the format carries every bit pattern).
  bool finite_tensors = true;
};

// Reads and validates a checkpoint. Throws UserError naming the file and the
// byte offset on: unreadable file, wrong magic, unknown version, truncated
// file, trailing bytes, checksum mismatch, a malformed payload, or (with
// options.finite_tensors) a non-finite value, naming the tensor and element.
Checkpoint LoadCheckpoint(const std::string& path, const LoadCheckpointOptions& options = {});

// "<dir>/ckpt-<step as 12 digits>.dtck". REQUIRES: step >= 0.
std::string CheckpointPath(const std::string& dir, std::int64_t step);

// Steps of the checkpoints named like CheckpointPath in `dir`, ascending.
// Temp files and other names are ignored; a missing dir gives {}.
std::vector<std::int64_t> CheckpointSteps(const std::string& dir);

// The path of the highest-step checkpoint in `dir`, or nullopt if none.
// It is not opened: LoadCheckpoint validates it.
std::optional<std::string> LatestCheckpoint(const std::string& dir);

struct CheckpointDirOptions {
  // Newest checkpoints kept after a save, >= 1: older ones are deleted, so
  // disk use stays at keep_last checkpoints (plus one while saving). More
  // than 1 keeps a fallback should the newest be damaged by something other
  // than a crash (disk fault, manual edit). Default 3.
  int keep_last = 3;
};

// Saves to CheckpointPath(dir, checkpoint.step) (creating dir if needed),
// then deletes all but the keep_last highest-step checkpoints (a save with a
// lower step than those kept is itself deleted) and the temp files of dead
// writers. Returns the path written. Throws UserError as
// SaveCheckpoint, or when keep_last < 1.
std::string SaveCheckpointToDir(const std::string& dir, const Checkpoint& checkpoint,
                                const CheckpointDirOptions& options = {});

}  // namespace dtsim::exec

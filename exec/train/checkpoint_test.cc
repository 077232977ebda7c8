#include "exec/train/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

#include "common/error.h"
#include "exec/byte_io.h"

namespace dtsim::exec {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dtsim_checkpoint_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const char* name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// Every kind of value the format must carry bit-exactly: NaN payloads, -0,
// infinities, denormals, extreme counters, an empty tensor, odd names.
Checkpoint Sample() {
  Checkpoint c;
  c.step = 123456789012;
  c.counters["seed"] = -1;
  c.counters["optimizer_steps"] = std::numeric_limits<std::int64_t>::max();
  c.counters["data_cursor"] = std::numeric_limits<std::int64_t>::min();
  c.tensors["conv1.weight"] = {1.5f, -0.0f, std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::denorm_min(),
                               std::bit_cast<float>(0x7fc01234u)};  // NaN with payload
  c.tensors["empty"] = {};
  c.tensors["name with spaces/ünïcode"] = std::vector<float>(1000, 0.25f);
  return c;
}

// operator== on floats says NaN != NaN; compare the bits.
void ExpectSameBits(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.counters, b.counters);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    auto it = b.tensors.find(name);
    ASSERT_NE(it, b.tensors.end()) << name;
    ASSERT_EQ(t.size(), it->second.size()) << name;
    EXPECT_EQ(std::memcmp(t.data(), it->second.data(), 4 * t.size()), 0) << name;
  }
}

std::string LoadError(const std::string& path) {
  try {
    LoadCheckpoint(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

void WriteBytes(const std::string& path, const std::vector<unsigned char>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST_F(CheckpointTest, RoundTripIsBitExact) {
  SaveCheckpoint(Path("a.dtck"), Sample());
  ExpectSameBits(Sample(), LoadCheckpoint(Path("a.dtck"), {.finite_tensors = false}));
  // Saving again over the file replaces it.
  Checkpoint other;
  other.step = 2;
  SaveCheckpoint(Path("a.dtck"), other);
  EXPECT_EQ(LoadCheckpoint(Path("a.dtck")), other);
}

// A checkpoint whose CRC is right but whose parameters are NaN (a diverged
// run saved them) is refused at load, naming the tensor and the element:
// resumed, it trained to NaN losses.
TEST_F(CheckpointTest, NonFiniteTensorsAreRefusedAtLoad) {
  Checkpoint c;
  c.counters["seed"] = 1;
  c.tensors["params"] = {1, 2, std::numeric_limits<float>::quiet_NaN(), 4};
  SaveCheckpoint(Path("nan.dtck"), c);
  const std::string err = LoadError(Path("nan.dtck"));
  EXPECT_NE(err.find("tensor \"params\" holds nan at element 2"), std::string::npos) << err;
  // Layout as in FileSizeFollowsTheDocumentedLayout: 24 header + 8 step + 4
  // + counter (4 + 4 + 8) + 4 tensors count = 56: the tensor at 56, its
  // name length (4), name (6), count (8), then element 2 at 56 + 18 + 8 = 82.
  EXPECT_NE(err.find("(byte offset 82)"), std::string::npos) << err;
  c.tensors["params"] = {1, -std::numeric_limits<float>::infinity()};
  SaveCheckpoint(Path("inf.dtck"), c);
  EXPECT_NE(LoadError(Path("inf.dtck")).find("holds -inf at element 1"), std::string::npos)
      << LoadError(Path("inf.dtck"));
  // Read as stored when asked.
  EXPECT_EQ(LoadCheckpoint(Path("inf.dtck"), {.finite_tensors = false}).tensors.at("params")[1],
            -std::numeric_limits<float>::infinity());
}

TEST_F(CheckpointTest, FileSizeFollowsTheDocumentedLayout) {
  // 24 header + 8 step + 4 + counter (4 + 4 "seed" + 8) + 4 + tensor
  // (4 + 1 "w" + 8 + 3 * 4) = 81 bytes.
  Checkpoint c;
  c.counters["seed"] = 5;
  c.tensors["w"] = {1, 2, 3};
  SaveCheckpoint(Path("s.dtck"), c);
  EXPECT_EQ(fs::file_size(Path("s.dtck")), 81u);
  auto b = ReadFileBytes(Path("s.dtck"));
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "DTSIMCK1");
  EXPECT_EQ(LoadLE<std::uint64_t>(&b[16]), 81u - 24);  // payload size
  EXPECT_EQ(LoadLE<std::uint64_t>(&b[24]), 0u);        // step
}

TEST_F(CheckpointTest, TruncationIsReportedWithOffsets) {
  SaveCheckpoint(Path("a.dtck"), Sample());
  const auto good = ReadFileBytes(Path("a.dtck"));
  const std::size_t size = good.size();
  // Cut in the data: the header still promises `size` bytes.
  auto cut = good;
  cut.resize(size - 10);
  WriteBytes(Path("cut.dtck"), cut);
  std::string err = LoadError(Path("cut.dtck"));
  EXPECT_NE(err.find("promises a file of " + std::to_string(size) + " bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated file: it ends at byte offset " + std::to_string(size - 10)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(Path("cut.dtck")), std::string::npos) << err;
  // Cut inside the header: the payload size field (16..23) is incomplete.
  cut.resize(20);
  WriteBytes(Path("cut.dtck"), cut);
  err = LoadError(Path("cut.dtck"));
  EXPECT_NE(err.find("expected the payload size (u64) (8 bytes) at byte offset 16, but the file "
                     "ends at byte offset 20"),
            std::string::npos)
      << err;
  // Empty file.
  WriteBytes(Path("cut.dtck"), {});
  EXPECT_NE(LoadError(Path("cut.dtck")).find("at byte offset 0"), std::string::npos);
  // Trailing bytes.
  auto longer = good;
  longer.push_back(7);
  WriteBytes(Path("long.dtck"), longer);
  err = LoadError(Path("long.dtck"));
  EXPECT_NE(err.find("found 1 unexpected bytes from byte offset " + std::to_string(size)),
            std::string::npos)
      << err;
}

TEST_F(CheckpointTest, EverySingleBitFlipIsRejected) {
  // CRC-32 detects every single-bit error in what it covers (bytes 16..end);
  // bytes 0..15 are checked as magic, version and the stored CRC itself.
  Checkpoint c;
  c.step = 3;
  c.counters["seed"] = 42;
  c.tensors["w"] = {1, 2, 3, 4};
  SaveCheckpoint(Path("a.dtck"), c);
  const auto good = ReadFileBytes(Path("a.dtck"));
  for (std::size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[byte] ^= static_cast<unsigned char>(1u << bit);
      WriteBytes(Path("bad.dtck"), bad);
      const std::string err = LoadError(Path("bad.dtck"));
      ASSERT_NE(err, "") << "flip of bit " << bit << " of byte " << byte << " was accepted";
      const char* want = byte < 8    ? "invalid magic at byte offset 0"
                         : byte < 12 ? "invalid version at byte offset 8"
                         : byte < 16 ? "checksum mismatch: the CRC-32 at byte offset 12"
                         : byte < 24 ? "payload size at byte offset 16"
                                     : "checksum mismatch";
      ASSERT_NE(err.find(want), std::string::npos) << "byte " << byte << ": " << err;
    }
  }
}

TEST_F(CheckpointTest, MissingFileAndBadDirectoryAreUserErrors) {
  EXPECT_NE(LoadError(Path("none.dtck")).find("cannot open file"), std::string::npos);
  try {
    SaveCheckpoint(Path("no/such/dir/a.dtck"), Sample());
    FAIL() << "saved into a missing directory";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create a temp file"), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointTest, DirectoryKeepsTheNewestAndFindsTheLatest) {
  const std::string dir = Path("run");
  EXPECT_EQ(LatestCheckpoint(dir), std::nullopt);
  EXPECT_EQ(CheckpointPath(dir, 1000), dir + "/ckpt-000000001000.dtck");
  Checkpoint c;
  for (std::int64_t step : {100, 200, 300, 400, 500}) {
    c.step = step;
    EXPECT_EQ(SaveCheckpointToDir(dir, c, {.keep_last = 2}), CheckpointPath(dir, step));
  }
  // keep_last = 2: only 400 and 500 remain.
  EXPECT_EQ(CheckpointSteps(dir), (std::vector<std::int64_t>{400, 500}));
  EXPECT_EQ(LatestCheckpoint(dir), CheckpointPath(dir, 500));
  EXPECT_EQ(LoadCheckpoint(*LatestCheckpoint(dir)).step, 500);
  // Temp files and foreign names are not checkpoints.
  WriteBytes(CheckpointPath(dir, 900) + ".dtsim-tmp.999999999.abcdef", {1, 2});
  WriteBytes(dir + "/ckpt-12x.dtck", {});
  WriteBytes(dir + "/notes.txt", {});
  EXPECT_EQ(LatestCheckpoint(dir), CheckpointPath(dir, 500));
  EXPECT_THROW(SaveCheckpointToDir(dir, c, {.keep_last = 0}), UserError);
}

// The step field of a checkpoint file (bytes 24..31), without loading it.
std::int64_t StepOnDisk(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char b[32] = {};
  in.read(reinterpret_cast<char*>(b), sizeof b);
  return static_cast<std::int64_t>(LoadLE<std::uint64_t>(b + 24));
}

// A child process saves a ~200 MB checkpoint in a loop; the parent SIGKILLs
// it at random moments. After every kill the target must load and be one
// complete version: step v, counter "version" v, every weight == v.
TEST_F(CheckpointTest, KilledWriterNeverLeavesATornFile) {
  constexpr std::size_t kFloats = 50'000'000;  // 200 MB
  const std::string path = Path("big.dtck");
  Checkpoint c;
  c.tensors["w"].assign(kFloats, 0.0f);
  c.tensors["b"] = {0.0f};
  auto set_version = [&c](std::int64_t v) {
    c.step = v;
    c.counters["version"] = v;
    std::fill(c.tensors["w"].begin(), c.tensors["w"].end(), static_cast<float>(v));
    c.tensors["b"][0] = static_cast<float>(v);
  };
  set_version(0);
  SaveCheckpoint(path, c);

  std::mt19937 rng(20240601);  // fixed: reproducible kill times
  std::int64_t last_seen = 0;
  int torn_writes = 0;  // kills that hit a save midway
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    const std::int64_t first_version = 1000 * (round + 1);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: never returns into gtest.
      try {
        for (std::int64_t v = first_version;; ++v) {
          set_version(v);
          SaveCheckpoint(path, c);
        }
      } catch (...) {
      }
      ::_exit(1);
    }
    // Even rounds: kill once the child's temp file has grown past a random
    // size (certainly mid-write). Odd rounds: wait until the child has
    // completed a save (the file's step, at byte offset 24, is one of its
    // versions), then kill after a random delay (anywhere: filling the
    // tensor, writing, fsync, rename).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    if (round % 2 == 0) {
      const auto threshold = std::uniform_int_distribution<std::uintmax_t>(1, 4 * kFloats - 1)(rng);
      bool reached = false;
      while (!reached && std::chrono::steady_clock::now() < deadline) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir_, ec)) {
          if (e.path().filename().string().find(".dtsim-tmp.") != std::string::npos &&
              e.file_size(ec) >= threshold) {
            reached = true;
          }
        }
        if (!reached) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    } else {
      while (StepOnDisk(path) < first_version && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 1000)(rng)));
    }
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: it failed to save";

    // A kill in the middle of a save leaves that child's temp file (until a
    // later save cleans it).
    std::string marker = ".dtsim-tmp." + std::to_string(pid) + ".";
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().find(marker) != std::string::npos) ++torn_writes;
    }
    const Checkpoint got = LoadCheckpoint(path);  // throws if torn
    const std::int64_t v = got.step;
    // Either what we saw before, or a version the child completed.
    EXPECT_TRUE(v == last_seen || (v >= first_version && v < first_version + 1000))
        << "round " << round << ": step " << v;
    EXPECT_EQ(got.counters.at("version"), v);
    const auto& w = got.tensors.at("w");
    ASSERT_EQ(w.size(), kFloats);
    const float fv = static_cast<float>(v);
    EXPECT_TRUE(std::all_of(w.begin(), w.end(), [fv](float x) { return x == fv; }))
        << "round " << round << ": weights of mixed versions";
    EXPECT_EQ(got.tensors.at("b"), std::vector<float>{fv});
    last_seen = v;
  }
  EXPECT_GE(torn_writes, 1) << "no kill hit a save midway; the test proved little";
  // The odd rounds waited for a completed save: the last one was round 3's,
  // whose versions start at 1000 * (3 + 1).
  EXPECT_GE(last_seen, 4000);
  std::printf("%d kills, %d of them mid-save; last complete version %lld\n", kRounds, torn_writes,
              static_cast<long long>(last_seen));

  // The next successful save cleans the dead writers' temp files.
  set_version(1);
  c.tensors["w"].assign(10, 1.0f);
  SaveCheckpoint(path, c);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".dtsim-tmp."), std::string::npos) << e.path();
  }
  EXPECT_EQ(LoadCheckpoint(path).step, 1);
}

}  // namespace
}  // namespace dtsim::exec

#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/file.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <fstream>
#include <sstream>
#include <string>

#include "common/error.h"

namespace dtsim {
namespace {
namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void Spit(const fs::path& p, const std::string& content) {
  std::ofstream f(p, std::ios::binary);
  f << content;
}

// Entries of `dir` whose names start with ".dtsim-".
std::vector<std::string> DtsimEntries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    // The folder's lock file stays by design (atomic_file.h).
    if (name.rfind(".dtsim-", 0) == 0 && name != ".dtsim-lock") names.push_back(name);
  }
  return names;
}

void Write(AtomicFileSet& set, const std::string& name, const std::string& content) {
  OutputFile f = set.Open(name);
  f << content;
  f.Close(name);
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("atomic_file_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "out");
    out_ = root_ / "out";
    victim_ = root_ / "victim.txt";
    Spit(victim_, "precious");
  }
  void TearDown() override { fs::remove_all(root_); }

  // An old set: report.json and summary.csv, plus a file of another command.
  void WriteOldSet() {
    Spit(out_ / "report.json", "old report");
    Spit(out_ / "summary.csv", "old summary");
    Spit(out_ / "exec.json", "other command");
  }
  void ExpectOldSet() {
    EXPECT_EQ(Slurp(out_ / "report.json"), "old report");
    EXPECT_EQ(Slurp(out_ / "summary.csv"), "old summary");
    EXPECT_EQ(Slurp(out_ / "exec.json"), "other command");
  }

  fs::path root_, out_, victim_;
};

TEST_F(AtomicFileTest, CommitReplacesTheSetAndKeepsOtherFiles) {
  WriteOldSet();
  AtomicFileSet set(out_);
  Write(set, "report.json", "new report");
  Write(set, "summary.csv", "new summary");
  // Before Commit the old set is what a reader sees.
  ExpectOldSet();
  const auto written = set.Commit();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0], out_ / "report.json");
  EXPECT_EQ(written[1], out_ / "summary.csv");
  EXPECT_EQ(Slurp(out_ / "report.json"), "new report");
  EXPECT_EQ(Slurp(out_ / "summary.csv"), "new summary");
  EXPECT_EQ(Slurp(out_ / "exec.json"), "other command");
  EXPECT_TRUE(DtsimEntries(out_).empty());
}

TEST_F(AtomicFileTest, LargeFilesAreWrittenWhole) {
  // Several times the 64 KiB buffer, with a byte pattern that shows any
  // lost or repeated chunk.
  std::string big;
  for (int i = 0; i < 300000; ++i) big += static_cast<char>('a' + i % 23);
  AtomicFileSet set(out_);
  Write(set, "trace.json", big);
  set.Commit();
  EXPECT_EQ(Slurp(out_ / "trace.json"), big);
}

// Issue 10 item 14: `o/summary.csv.tmp` a symbolic link to another file made
// `dtsim run S --out o` overwrite that file.
TEST_F(AtomicFileTest, LinkAtTheOldTempNameIsNeitherFollowedNorRemoved) {
  fs::create_symlink(victim_, out_ / "summary.csv.tmp");
  AtomicFileSet set(out_);
  Write(set, "summary.csv", "new summary");
  set.Commit();
  EXPECT_EQ(Slurp(victim_), "precious");
  EXPECT_EQ(Slurp(out_ / "summary.csv"), "new summary");
  EXPECT_TRUE(fs::is_symlink(out_ / "summary.csv.tmp")) << "not dtsim's: left alone";
}

// A link at an output's name is neither written through nor replaced: as
// root, `--json /dev/stdout` renamed the report over the machine's
// /dev/stdout link (issue 44 item 2). Refused before anything is written.
TEST_F(AtomicFileTest, LinkAtTheFinalNameIsRefusedAndLeftAlone) {
  fs::create_symlink(victim_, out_ / "report.json");
  AtomicFileSet set(out_);
  EXPECT_THROW(set.Open("report.json"), UserError);
  EXPECT_EQ(Slurp(victim_), "precious");
  EXPECT_TRUE(fs::is_symlink(out_ / "report.json"));
  EXPECT_TRUE(DtsimEntries(out_).empty()) << "refused before the folder is touched";
}

// Issue 44 item 2: `dtsim run S --json /dev/null` as root made /dev/null a
// regular file and left /dev/.dtsim-lock. A FIFO stands in for the device
// (creating a device node needs root); both are refused the same way.
TEST_F(AtomicFileTest, FifoAtTheFinalNameIsRefusedAndNoLockIsLeft) {
  ASSERT_EQ(::mkfifo((out_ / "report.json").c_str(), 0600), 0);
  try {
    WriteFileAtomic(out_ / "report.json", [](std::ostream& f) { f << "{}"; });
    ADD_FAILURE() << "a FIFO was replaced";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("a FIFO stands at its name"), std::string::npos) << e.what();
  }
  struct stat st{};
  ASSERT_EQ(::lstat((out_ / "report.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(DtsimEntries(out_).empty()) << "no lock or stage beside a refused output";
}

TEST_F(AtomicFileTest, CharacterDeviceIsRefused) {
  // /dev/null is a character device on every Linux machine; its folder is
  // never written because the name is checked first.
  EXPECT_THROW(WriteFileAtomic("/dev/null", [](std::ostream& f) { f << "{}"; }), UserError);
  struct stat st{};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A link that appears between Open and Commit is refused at the commit point.
TEST_F(AtomicFileTest, LinkPlantedBeforeCommitIsRefused) {
  AtomicFileSet set(out_);
  Write(set, "report.json", "new report");
  fs::create_symlink(victim_, out_ / "report.json");
  EXPECT_THROW(set.Commit(), UserError);
  EXPECT_EQ(Slurp(victim_), "precious");
  EXPECT_TRUE(fs::is_symlink(out_ / "report.json"));
}

TEST_F(AtomicFileTest, LinksWithDtsimNamesAreNotFollowed) {
  // A link named like a stage or a commit folder, pointing at a folder with
  // files: neither emptied (stage) nor installed (commit).
  fs::create_directories(root_ / "elsewhere");
  Spit(root_ / "elsewhere" / "report.json", "planted");
  fs::create_directory_symlink(root_ / "elsewhere", out_ / ".dtsim-stage-aaaaaaaaaaaa");
  fs::create_directory_symlink(root_ / "elsewhere", out_ / ".dtsim-commit-aaaaaaaaaaaa");
  WriteOldSet();
  AtomicFileSet set(out_);
  Write(set, "summary.csv", "new summary");
  set.Commit();
  EXPECT_EQ(Slurp(root_ / "elsewhere" / "report.json"), "planted");
  EXPECT_EQ(Slurp(out_ / "report.json"), "old report");
  EXPECT_TRUE(fs::is_symlink(out_ / ".dtsim-stage-aaaaaaaaaaaa"));
}

TEST_F(AtomicFileTest, FoldersNotMadeByDtsimAreLeftAlone) {
  // Mode 0755: dtsim makes its stages 0700, so this one is the user's.
  fs::create_directories(out_ / ".dtsim-stage-user");
  fs::permissions(out_ / ".dtsim-stage-user", fs::perms::owner_all | fs::perms::group_read |
                                                  fs::perms::group_exec | fs::perms::others_read |
                                                  fs::perms::others_exec);
  Spit(out_ / ".dtsim-stage-user" / "notes.txt", "mine");
  AtomicFileSet set(out_);
  Write(set, "summary.csv", "new summary");
  set.Commit();
  EXPECT_EQ(Slurp(out_ / ".dtsim-stage-user" / "notes.txt"), "mine");
}

TEST_F(AtomicFileTest, FailureBeforeCommitLeavesTheOldSetAndNoLeftovers) {
  WriteOldSet();
  try {
    AtomicFileSet set(out_);
    Write(set, "report.json", "new report");
    OutputFile f = set.Open("summary.csv");
    f << "half of the new";
    throw std::runtime_error("simulated failure while writing summary.csv");
  } catch (const std::runtime_error&) {
  }
  ExpectOldSet();
  EXPECT_TRUE(DtsimEntries(out_).empty());
}

TEST_F(AtomicFileTest, KilledWhileWritingLeavesTheOldSetAndTheNextSetCleansUp) {
  WriteOldSet();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Killed (no destructors, no Commit) after one file of two.
    AtomicFileSet set(out_);
    Write(set, "report.json", "new report");
    OutputFile f = set.Open("summary.csv");
    f << "half of the new";
    f.flush();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ExpectOldSet();
  ASSERT_EQ(DtsimEntries(out_).size(), 1u) << "the dead set's stage";
  // The next set written to the folder removes the dead one's stage.
  AtomicFileSet next(out_);
  Write(next, "trace.json", "trace");
  next.Commit();
  ExpectOldSet();
  EXPECT_TRUE(DtsimEntries(out_).empty());
}

TEST_F(AtomicFileTest, InstallInterruptedAfterTheCommitPointIsFinishedByTheNextSet) {
  // What a kill between the commit point and the renames leaves (see
  // atomic_file.h): the complete new set in a 0700 commit folder, report.json
  // already installed, summary.csv not yet.
  WriteOldSet();
  Spit(out_ / "report.json", "new report");
  const fs::path commit = out_ / ".dtsim-commit-bbbbbbbbbbbb";
  fs::create_directory(commit);
  fs::permissions(commit, fs::perms::owner_all);
  Spit(commit / "summary.csv", "new summary");
  AtomicFileSet next(out_);
  Write(next, "trace.json", "trace");
  next.Commit();
  EXPECT_EQ(Slurp(out_ / "report.json"), "new report");
  EXPECT_EQ(Slurp(out_ / "summary.csv"), "new summary");
  EXPECT_EQ(Slurp(out_ / "trace.json"), "trace");
  EXPECT_TRUE(DtsimEntries(out_).empty());
}

TEST_F(AtomicFileTest, ALiveSetIsNotCleanedByAnother) {
  AtomicFileSet first(out_);
  Write(first, "report.json", "first");
  // flock is per open file description: a second set in this process sees
  // the first one's stage as live.
  AtomicFileSet second(out_);
  Write(second, "summary.csv", "second");
  second.Commit();
  first.Commit();
  EXPECT_EQ(Slurp(out_ / "report.json"), "first");
  EXPECT_EQ(Slurp(out_ / "summary.csv"), "second");
  EXPECT_TRUE(DtsimEntries(out_).empty());
}

// Two writers committing into one folder install one after the other: a
// commit waits while another holds the folder's lock (here the test holds
// it, as a committing set in another process would), and the old set stays
// whole meanwhile.
TEST_F(AtomicFileTest, ACommitWaitsWhileAnotherSetInstalls) {
  WriteOldSet();
  AtomicFileSet set(out_);
  Write(set, "report.json", "new report");
  Write(set, "summary.csv", "new summary");
  const int lock = ::open((out_ / ".dtsim-lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  auto commit = std::async(std::launch::async, [&] { return set.Commit(); });
  EXPECT_EQ(commit.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  ExpectOldSet();
  ::flock(lock, LOCK_UN);
  ::close(lock);
  ASSERT_EQ(commit.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(commit.get().size(), 2u);
  EXPECT_EQ(Slurp(out_ / "report.json"), "new report");
  EXPECT_EQ(Slurp(out_ / "summary.csv"), "new summary");
}

// A lock another program holds on the folder itself concerns no writer.
TEST_F(AtomicFileTest, AForeignLockOnTheFolderStallsNoWriter) {
  const int folder = ::open(out_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(folder, 0);
  ASSERT_EQ(::flock(folder, LOCK_EX), 0);
  auto write = std::async(std::launch::async, [&] {
    AtomicFileSet set(out_);
    Write(set, "report.json", "new report");
    return set.Commit();
  });
  const bool done = write.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  ::flock(folder, LOCK_UN);  // lets a stalled writer finish either way
  ::close(folder);
  EXPECT_TRUE(done);
  write.get();
  EXPECT_EQ(Slurp(out_ / "report.json"), "new report");
}

// The lock file is never opened through a link: a link at its name is
// refused and its target left alone.
TEST_F(AtomicFileTest, ALinkAtTheLockFileIsRefused) {
  fs::create_symlink(victim_, out_ / ".dtsim-lock");
  AtomicFileSet set(out_);
  EXPECT_THROW(Write(set, "report.json", "new"), UserError);
  EXPECT_EQ(Slurp(victim_), "precious");
  EXPECT_FALSE(fs::exists(out_ / "report.json"));
}

TEST_F(AtomicFileTest, StaleTmpOfOlderVersionsIsRemoved) {
  Spit(out_ / "report.json.tmp", "half");
  AtomicFileSet set(out_);
  Write(set, "report.json", "new report");
  set.Commit();
  EXPECT_FALSE(fs::exists(out_ / "report.json.tmp"));
}

TEST_F(AtomicFileTest, NamesStayInTheirFolder) {
  AtomicFileSet set(out_);
  for (const char* name : {"../escaped", "a/b", "..", ".", "", ".dtsim-stage-x"})
    EXPECT_THROW(set.Open(name), UserError) << name;
  EXPECT_FALSE(fs::exists(root_ / "escaped"));
  EXPECT_FALSE(fs::exists(out_ / "a"));
}

TEST_F(AtomicFileTest, MakesMissingFoldersUnlessTold) {
  AtomicFileSet made(root_ / "x" / "y");
  Write(made, "a.txt", "a");
  made.Commit();
  EXPECT_EQ(Slurp(root_ / "x" / "y" / "a.txt"), "a");
  AtomicFileSet missing(root_ / "z", {.create_folder = false});
  EXPECT_THROW(missing.Open("a.txt"), UserError);
  EXPECT_FALSE(fs::exists(root_ / "z"));
}

TEST_F(AtomicFileTest, AFolderAtAnOutputNameIsRefusedBeforeAnythingChanges) {
  WriteOldSet();
  fs::create_directory(out_ / "trace.json");
  AtomicFileSet set(out_);
  Write(set, "report.json", "new report");
  EXPECT_THROW(Write(set, "trace.json", "trace"), UserError);  // at Open, before any rename
  ExpectOldSet();
}

TEST_F(AtomicFileTest, CommitBeforeCloseIsABug) {
  AtomicFileSet set(out_);
  OutputFile f = set.Open("report.json");
  f << "x";
  EXPECT_THROW(set.Commit(), InternalError);
}

TEST_F(AtomicFileTest, WriteFileAtomicRefusesALinkAndLeavesNothingBehind) {
  fs::create_symlink(victim_, out_ / "plan.json");
  EXPECT_THROW(WriteFileAtomic(out_ / "plan.json", [](std::ostream& f) { f << "{}\n"; }),
               UserError);
  EXPECT_EQ(Slurp(victim_), "precious");
  EXPECT_TRUE(fs::is_symlink(out_ / "plan.json"));
  fs::remove(out_ / "plan.json");
  WriteFileAtomic(out_ / "plan.json", [](std::ostream& f) { f << "{}\n"; });
  EXPECT_EQ(Slurp(out_ / "plan.json"), "{}\n");
  EXPECT_TRUE(DtsimEntries(out_).empty());
  // A writer that fails leaves the old file.
  EXPECT_THROW(WriteFileAtomic(out_ / "plan.json",
                               [](std::ostream& f) {
                                 f << "partial";
                                 throw UserError("simulated failure");
                               }),
               UserError);
  EXPECT_EQ(Slurp(out_ / "plan.json"), "{}\n");
  EXPECT_TRUE(DtsimEntries(out_).empty());
  EXPECT_THROW(WriteFileAtomic(root_ / "missing" / "plan.json", [](std::ostream&) {}), UserError);
  EXPECT_THROW(WriteFileAtomic(out_ / "", [](std::ostream&) {}), UserError);
}

}  // namespace
}  // namespace dtsim

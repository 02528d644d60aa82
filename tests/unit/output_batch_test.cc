// A run's outputs are replaced together or not at all (cli/output_file.h OutputBatch): a failure
// in one leaves every target as it was and no temporary file behind, a signal while writing
// removes the temporaries too, and a symlink is written through. Before, each output was renamed
// as soon as it was written (`simulate --trace T --summary /dev/full` had replaced T), a SIGTERM
// left PATH.tmp.PID beside the target, and a symlink was replaced by a regular file.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../cli/output_file.h"
#include "cli_testlib.h"
#include "temp_path.h"

namespace zerosim::cli {
namespace {

// A fresh directory for one test; its entries' names, sorted.
std::string fresh_dir(const std::string& name) {
  std::string dir = testutil::unique_temp_path(name);
  std::system(("rm -rf '" + dir + "'").c_str());
  ::mkdir(dir.c_str(), 0755);
  return dir;
}
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}
void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
OutputBatch::Writer text(const std::string& t) {
  return [t](std::ostream& o) {
    o << t;
    return true;
  };
}

TEST(OutputBatch, AFailedOutputReplacesNoneOfTheOthers) {
  const std::string dir = fresh_dir("batch_fail");
  put(dir + "/a.json", "old a");
  put(dir + "/b.json", "old b");
  std::ostringstream err;
  {
    OutputBatch batch(err);
    batch.add("--trace", dir + "/a.json", text("new a"));
    batch.add("--summary", dir + "/b.json", [](std::ostream& o) {
      o << "half";
      return false;  // the writer found what it wrote wrong
    });
    batch.add("--chrome-trace", dir + "/c.json", text("new c"));
    EXPECT_FALSE(batch.commit());
  }
  EXPECT_EQ(clitest::read_all(dir + "/a.json"), "old a");
  EXPECT_EQ(clitest::read_all(dir + "/b.json"), "old b");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(err.str().find("wrote"), std::string::npos) << err.str();
}

TEST(OutputBatch, AFullDeviceInPlaceReplacesNoStagedFile) {
  const std::string dir = fresh_dir("batch_full");
  put(dir + "/a.json", "old a");
  std::ostringstream err;
  OutputBatch batch(err);
  batch.add("--trace", dir + "/a.json", text("new a"));
  batch.add("--summary", "/dev/full", text(std::string(1 << 16, 'x')));
  EXPECT_FALSE(batch.commit());
  EXPECT_EQ(clitest::read_all(dir + "/a.json"), "old a");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"a.json"}));
  EXPECT_EQ(err.str(), "--summary: write to /dev/full failed: No space left on device\n");
}

TEST(OutputBatch, AllWrittenAreReportedInOrder) {
  const std::string dir = fresh_dir("batch_ok");
  put(dir + "/a.json", "old a");
  std::ostringstream err;
  OutputBatch batch(err);
  batch.add("--trace", dir + "/a.json", text("new a"));
  batch.add("--summary", dir + "/b.json", text("bb"));
  ASSERT_TRUE(batch.commit()) << err.str();
  EXPECT_EQ(clitest::read_all(dir + "/a.json"), "new a");
  EXPECT_EQ(clitest::read_all(dir + "/b.json"), "bb");
  EXPECT_EQ(err.str(), "wrote " + dir + "/a.json (5 bytes)\nwrote " + dir + "/b.json (2 bytes)\n");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"a.json", "b.json"}));
}

// A device or a pipe has no position: the bytes are counted (it said "wrote /dev/stdout (-1
// bytes)" into a pipe, and 0 bytes for /dev/null).
TEST(OutputBatch, InPlaceTargetsReportTheBytesWritten) {
  std::ostringstream err;
  ASSERT_TRUE(write_file("--output", "/dev/null", err, text(std::string(6497, 'x'))));
  EXPECT_EQ(err.str(), "wrote /dev/null (6497 bytes)\n");
  const auto r = clitest::run_cli("plan --model gpt2 -o /dev/stdout");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "wrote /dev/stdout (" + std::to_string(r.out.size()) + " bytes)\n");
}

// -o /dev/stdout with stdout appended to a file: the file keeps what it held (a rename over the
// file /dev/stdout resolves to replaced it; before that, over the /dev/stdout link itself).
TEST(OutputBatch, StdoutAppendedToAFileKeepsItsContents) {
  const std::string dir = fresh_dir("batch_stdout");
  put(dir + "/log.txt", "earlier\n");
  ASSERT_EQ(std::system((std::string(ZEROSIM_CLI_PATH) + " plan --model gpt2 -o /dev/stdout >> " +
                         dir + "/log.txt 2>/dev/null")
                            .c_str()),
            0);
  const std::string log = clitest::read_all(dir + "/log.txt");
  EXPECT_EQ(log.rfind("earlier\nzerosim plan: ", 0), 0u) << log.substr(0, 200);
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/stdout", &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST(OutputBatch, ASymlinkIsWrittenThrough) {
  const std::string dir = fresh_dir("batch_link");
  put(dir + "/target.json", "old");
  ASSERT_EQ(::symlink("target.json", (dir + "/link.json").c_str()), 0);
  std::ostringstream err;
  ASSERT_TRUE(write_file("--summary", dir + "/link.json", err, text("new"))) << err.str();
  struct stat st {};
  ASSERT_EQ(::lstat((dir + "/link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(clitest::read_all(dir + "/target.json"), "new");
}

// A dangling link as an output: check_outputs' probe created the target through the link and
// then removed the link, so the run left an empty target and a regular file in the link's place
// (found by a hostile-input pass). Now the link stays and its target gets the content.
TEST(OutputBatch, ADanglingSymlinkIsWrittenThrough) {
  const std::string dir = fresh_dir("batch_dangling");
  ASSERT_EQ(::symlink("later.json", (dir + "/link.json").c_str()), 0);
  const std::string cmd = "schedule --scenario " + std::string(ZEROSIM_SOURCE_DIR) +
                          "/scenarios/tiny_zero2_4gpu.json -o " + dir + "/link.json";
  clitest::CliRun r = clitest::run_cli(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat((dir + "/link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_NE(clitest::read_all(dir + "/later.json").find("\"format\""), std::string::npos);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"later.json", "link.json"}));
  // A chain of links: the last one's missing target gets the content, every link stays.
  ASSERT_EQ(::symlink("l2.json", (dir + "/l1.json").c_str()), 0);
  ASSERT_EQ(::symlink("end.json", (dir + "/l2.json").c_str()), 0);
  const std::string chain = "schedule --scenario " + std::string(ZEROSIM_SOURCE_DIR) +
                            "/scenarios/tiny_zero2_4gpu.json -o " + dir + "/l1.json";
  clitest::CliRun c = clitest::run_cli(chain);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  ASSERT_EQ(::lstat((dir + "/l2.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_NE(clitest::read_all(dir + "/end.json").find("\"format\""), std::string::npos);
}

// A legal name of 250 bytes: its temporary "<name>.tmp.<pid>.<n>" passed NAME_MAX and the output
// was refused as "File name too long" (found by a hostile-input pass).
TEST(OutputBatch, ANameNearNameMaxIsWritten) {
  const std::string dir = fresh_dir("batch_long_name");
  const std::string name = std::string(250, 'o') + ".json";
  std::ostringstream err;
  ASSERT_TRUE(write_file("--output", dir + "/" + name, err, text("new"))) << err.str();
  EXPECT_EQ(clitest::read_all(dir + "/" + name), "new");
  EXPECT_EQ(entries(dir), std::vector<std::string>{name});
}

TEST(OutputBatch, ASignalWhileWritingRemovesTheTemporaryFiles) {
  const std::string dir = fresh_dir("batch_signal");
  put(dir + "/a.json", "old a");
  for (int sig : {SIGTERM, SIGINT}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::ostringstream err;
      OutputBatch batch(err);
      batch.add("--trace", dir + "/a.json", text("new a"));
      batch.add("--summary", dir + "/b.json", [sig](std::ostream& o) {
        o << "part" << std::flush;
        std::raise(sig);  // as if the user pressed Ctrl-C while the second file was written
        return true;
      });
      batch.commit();
      ::_exit(0);  // not reached: the handler re-raises with the default action
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(clitest::read_all(dir + "/a.json"), "old a");
    EXPECT_EQ(entries(dir), (std::vector<std::string>{"a.json"}));
  }
}

TEST(OutputBatch, TwoOutputFlagsNamingOneFileAreRefused) {
  const std::string dir = fresh_dir("batch_twice");
  const std::string scenario = std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json";
  for (const char* name : {"dup.json", "./dup.json"}) {
    std::string args = "simulate --scenario ";
    args += scenario;
    args += " --trace " + dir;
    args += "/dup.json --summary " + dir;
    args += "/";
    args += name;
    std::string expected = "--summary: expected a file that no other output names, got \"" + dir;
    expected += "/";
    expected += name;
    expected += "\", the file of --trace";
    clitest::expect_one_line_error(args, expected);
    EXPECT_TRUE(entries(dir).empty());
  }
  clitest::expect_one_line_error("schedule --scenario " + scenario + " -o " + dir +
                                     "/s.json --collectives-out " + dir + "/s.json",
                                 "--collectives-out: expected a file that no other output names");
  EXPECT_TRUE(entries(dir).empty());
}

}  // namespace
}  // namespace zerosim::cli

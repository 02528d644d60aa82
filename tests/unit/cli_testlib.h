// Helpers for the tests that run the zerosim executable (ZEROSIM_CLI_PATH): run it, capture stdout,
// stderr and the exit code, and expect one-line errors.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace zerosim::clitest {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `program` (a path) with `args` through the shell.
inline CliRun run_program(const std::string& program, const std::string& args) {
  static int counter = 0;
  // The pid keeps parallel test processes (ctest -j) from sharing a file.
  std::string err_path = ::testing::TempDir() + "zerosim_cli_err_" + std::to_string(getpid()) +
                         "_" + std::to_string(counter++);
  std::string cmd = program + " " + args + " 2>" + err_path;
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_all(err_path);
  std::remove(err_path.c_str());
  return r;
}

inline CliRun run_cli(const std::string& args) { return run_program(ZEROSIM_CLI_PATH, args); }

inline std::string data(const std::string& rel) {
  return std::string(ZEROSIM_TEST_DATA_DIR) + "/" + rel;
}

// One line on stderr, exit code 1, and the line contains `expected`.
inline void expect_one_line_error(const std::string& args, const std::string& expected) {
  CliRun r = run_cli(args);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(expected), std::string::npos) << "args: " << args << "\nstderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace zerosim::clitest

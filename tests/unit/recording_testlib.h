// The shipped recording (tests/data/recordings/tiny_gloo_2ranks) and private copies of it to
// break, for the tests of `zerosim check --measured DIR` and `zerosim validate --recording DIR`.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_testlib.h"
#include "temp_path.h"

namespace zerosim::rectest {

inline const std::string kRec = clitest::data("recordings/tiny_gloo_2ranks");

/// A private copy of the shipped recording, under a per-process temporary name (`name` says which
/// test file and test it is for, so no two tests share one).
inline std::string copy_recording(const std::string& name) {
  const std::filesystem::path dir = testutil::unique_temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::copy(kRec, dir, std::filesystem::copy_options::recursive);
  return dir.string();
}

inline void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

/// `s` with its first `from` replaced by `to`; the test fails when `s` holds no `from`.
inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

/// Replaces the first `from` of file `path` by `to`.
inline void edit(const std::string& path, const std::string& from, const std::string& to) {
  write(path, replace(clitest::read_all(path), from, to));
}

}  // namespace zerosim::rectest

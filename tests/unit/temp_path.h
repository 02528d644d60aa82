// A per-process temporary path for tests: the pid in the name keeps two test processes (ctest -j,
// or several checkouts testing at once on one machine) from writing, reading or removing each
// other's file, as a fixed name under /tmp would.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace zerosim::testutil {

/// ::testing::TempDir() + "zerosim_<pid>_" + name.
inline std::string unique_temp_path(const std::string& name) {
  return ::testing::TempDir() + "zerosim_" + std::to_string(getpid()) + "_" + name;
}

}  // namespace zerosim::testutil

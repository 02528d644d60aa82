// Writing a command's output files: open first (so a bad path fails before any work), then report
// one line per written file on stderr so long runs show what they produced.
#pragma once

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>

#include "commands.h"

namespace zerosim::cli {

/// Writes `path` with `write`; false (and one line on `err`) when it cannot be opened or written.
inline bool write_file(const std::string& flag, const std::string& path, std::ostream& err,
                       const std::function<void(std::ostream&)>& write) {
  std::ofstream f(path, std::ios::binary);
  if (!f) {
    err << flag << ": cannot write " << path << "\n";
    return false;
  }
  write(f);
  f.flush();
  if (!f) {
    err << flag << ": write to " << path << " failed\n";
    return false;
  }
  err << "wrote " << path << " (" << static_cast<long long>(f.tellp()) << " bytes)\n";
  return true;
}

/// Checks up front that `path` can be created, without leaving a file behind if it did not exist.
inline bool can_write(const std::string& flag, const std::string& path, std::ostream& err) {
  const bool existed = static_cast<bool>(std::ifstream(path));
  {
    std::ofstream f(path, std::ios::app);
    if (!f) {
      err << flag << ": cannot write " << path << "\n";
      return false;
    }
  }
  if (!existed) std::remove(path.c_str());
  return true;
}

}  // namespace zerosim::cli

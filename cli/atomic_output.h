// Output files that are never presented half-written: the content goes to a temporary file in the
// same directory, which is renamed over the target only after every write and the close
// succeeded. A failure leaves any existing file untouched and removes the temporary one.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>

namespace zerosim::cli {

/// Writes `path` atomically with `write`; false (and one line on `err`) on any failure.
inline bool write_file_atomic(const std::string& flag, const std::string& path, std::ostream& err,
                              const std::function<void(std::ostream&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  long long size = 0;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) {
      err << flag << ": cannot write " << path << " (cannot create " << tmp << ")\n";
      return false;
    }
    write(f);
    f.flush();
    size = static_cast<long long>(f.tellp());
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      err << flag << ": write to " << path << " failed (disk full?); the file is unchanged\n";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    err << flag << ": cannot replace " << path << "\n";
    return false;
  }
  err << "wrote " << path << " (" << size << " bytes)\n";
  return true;
}

}  // namespace zerosim::cli

// Writing a command's output files, so that no input is clobbered and no failure is silent.
//   check_outputs(): before any work, every output flag must name a path that can be created, is
//     not a directory, and is not the same file (stat dev/ino) as an input (any other FILE flag)
//     or as another output.
//   write_file(): the content goes to a temporary file in the same directory, renamed over the
//     target only after the writer, every write and the close succeeded; any failure (a full
//     disk, a writer that reports an error) leaves an existing file untouched. A target that
//     exists and is not a regular file (/dev/null, /dev/full, a pipe) is written in place, and
//     every write and the close are checked there too.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "zerosim/input_file.h"

namespace zerosim::cli {

namespace output_detail {
inline std::string reason() { return errno == 0 ? "" : std::string(": ") + std::strerror(errno); }
inline bool same_regular_file(const struct stat& a, const std::string& path) {
  struct stat b {};
  return ::stat(path.c_str(), &b) == 0 && S_ISREG(b.st_mode) && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}
}  // namespace output_detail

/// Checks the output flags among `outputs` that `args` gives; false (and one line per problem on
/// `err`) when one is a directory, cannot be created, or is the same file as another FILE flag.
inline bool check_outputs(const ParsedArgs& args, const std::vector<FlagSpec>& specs,
                          std::initializer_list<const char*> outputs, std::ostream& err) {
  bool ok = true;
  for (const char* flag : outputs) {
    const auto path = args.get(flag);
    if (!path) continue;
    struct stat st {};
    const bool existed = ::stat(path->c_str(), &st) == 0;
    if (existed && S_ISDIR(st.st_mode)) {
      err << flag << ": expected a regular file, got a directory: " << quote(*path) << "\n";
      ok = false;
      continue;
    }
    // A FIFO no process reads would block the write for ever: probe it without blocking (ENXIO:
    // no reader). One with a reader (`--output /dev/stdout | jq`) is written in place.
    if (existed && S_ISFIFO(st.st_mode)) {
      const int fd = ::open(path->c_str(), O_WRONLY | O_NONBLOCK);  // NOLINT: POSIX varargs
      if (fd < 0) {
        err << flag << ": expected a FIFO that a process reads, got " << quote(*path)
            << (errno == ENXIO ? " with no reader" : output_detail::reason()) << "\n";
        ok = false;
        continue;
      }
      ::close(fd);
    }
    if (existed && !S_ISREG(st.st_mode)) continue;  // /dev/null, a pipe: written in place
    if (existed) {
      bool clash = false;
      for (const FlagSpec& other : specs) {
        if (other.value_name != "FILE" || other.name == flag) continue;
        const auto other_path = args.get(other.name);
        if (!other_path || !output_detail::same_regular_file(st, *other_path)) continue;
        err << flag << ": expected a file that no other flag names, got " << quote(*path)
            << ", the file of " << other.name << " (refusing to overwrite it)\n";
        clash = true;
        break;
      }
      if (clash) {
        ok = false;
        continue;
      }
    }
    {
      errno = 0;
      std::ofstream f(*path, std::ios::app);  // app: an existing file is not truncated
      if (!f) {
        err << flag << ": cannot write " << *path << output_detail::reason() << "\n";
        ok = false;
        continue;
      }
    }
    if (!existed) std::remove(path->c_str());
  }
  return ok;
}

/// Writes `path` with `write` (false: what it wrote is wrong, and it has said why on `err`);
/// false, and the existing file untouched, on any failure. Reports "wrote PATH (N bytes)".
inline bool write_file(const std::string& flag, const std::string& path, std::ostream& err,
                       const std::function<bool(std::ostream&)>& write) {
  struct stat st {};
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) {
    err << flag << ": expected a regular file, got a directory: " << quote(path) << "\n";
    return false;
  }
  if (existed && S_ISREG(st.st_mode))
    for (const InputFileId& in : input_files_read())
      if (in.device == static_cast<std::uint64_t>(st.st_dev) &&
          in.inode == static_cast<std::uint64_t>(st.st_ino)) {
        err << flag << ": expected a file other than the input " << quote(in.path)
            << " (read for this run), got " << quote(path) << "; the file is unchanged\n";
        return false;
      }
  const bool atomic = !existed || S_ISREG(st.st_mode);
  const std::string target = atomic ? path + ".tmp." + std::to_string(::getpid()) : path;
  const auto discard = [&] {
    if (atomic) std::remove(target.c_str());
  };
  long long size = 0;
  bool wrote = false;
  {
    errno = 0;
    std::ofstream f(target, std::ios::binary | std::ios::trunc);
    if (!f) {
      err << flag << ": cannot write " << path << output_detail::reason() << "\n";
      discard();
      return false;
    }
    wrote = write(f);
    f.flush();
    size = static_cast<long long>(f.tellp());
    f.close();
    if (!f) {
      err << flag << ": write to " << path << " failed" << output_detail::reason()
          << (atomic && existed ? "; the file is unchanged" : "") << "\n";
      discard();
      return false;
    }
  }
  if (!wrote) {
    discard();
    return false;
  }
  if (atomic) {
    if (existed) ::chmod(target.c_str(), st.st_mode & 07777);
    if (std::rename(target.c_str(), path.c_str()) != 0) {
      err << flag << ": cannot replace " << path << output_detail::reason() << "\n";
      discard();
      return false;
    }
  }
  err << "wrote " << path << " (" << size << " bytes)\n";
  return true;
}

}  // namespace zerosim::cli

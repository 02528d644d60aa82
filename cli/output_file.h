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
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <streambuf>
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
// A stream buffer that passes everything on to `to` and counts the bytes `to` took.
class CountingBuf : public std::streambuf {
 public:
  explicit CountingBuf(std::streambuf* to) : to_(to) {}
  long long count() const { return count_; }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    if (traits_type::eq_int_type(to_->sputc(traits_type::to_char_type(c)), traits_type::eof()))
      return traits_type::eof();
    ++count_;
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const std::streamsize w = to_->sputn(s, n);
    count_ += w;
    return w;
  }
  int sync() override { return to_->pubsync(); }

 private:
  std::streambuf* to_;
  long long count_ = 0;
};

// Which file `path` names: "dev:ino" for an existing regular file, else (a file to be created)
// its directory's real path and its name; "" for anything else (/dev/null, a pipe), which two
// outputs may share.
inline std::string file_key(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    return S_ISREG(st.st_mode) ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) : "";
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (real == nullptr) return "";
  std::string key = std::string("new:") + real + "/" + path.substr(slash + 1);
  std::free(real);  // NOLINT: realpath's buffer comes from malloc
  return key;
}

// The missing file a dangling symlink ends at (each target joined to its link's directory when
// relative; a chain of links followed to its end, at most 40 as the kernel's ELOOP); "" when `path`
// is not a symlink to a missing file. Written through, as a link to an existing file is: the
// probe created the target through the link and then removed the link, leaving an empty target
// and the link replaced by a regular file (found by a hostile-input pass).
inline std::string dangling_link_target(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return "";
  std::string at = path;
  for (int hop = 0; hop < 40; ++hop) {
    struct stat lst {};
    if (::lstat(at.c_str(), &lst) != 0) return hop == 0 ? "" : at;  // the missing end
    if (!S_ISLNK(lst.st_mode)) return "";
    std::string target(4096, '\0');
    const ssize_t n = ::readlink(at.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) return "";
    target.resize(static_cast<std::size_t>(n));
    const std::size_t slash = at.rfind('/');
    if (target[0] != '/' && slash != std::string::npos) target.insert(0, at, 0, slash + 1);
    at = std::move(target);
  }
  return "";  // a loop: the write fails and says so
}

// The staged file beside `real`: "<real>.tmp.<pid>.<index>", or, where that name would pass
// NAME_MAX (a legal 250-byte output name was refused as "File name too long"), a short hidden
// name in the same directory.
inline std::string temp_name(const std::string& real, std::size_t index) {
  const std::string suffix = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(index);
  const std::size_t slash = real.rfind('/');
  const std::size_t base = real.size() - (slash == std::string::npos ? 0 : slash + 1);
  if (base + suffix.size() <= 255) return real + suffix;
  return real.substr(0, slash == std::string::npos ? 0 : slash + 1) + ".zerosim" + suffix;
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
    // Two outputs naming one file: the second replaced the first, exit 0 (`--trace t.json
    // --summary t.json` left the summary only), whether or not the file existed before.
    bool twice = false;
    const std::string key = output_detail::file_key(*path);
    for (const char* earlier : outputs) {
      if (std::strcmp(earlier, flag) == 0) break;
      const auto earlier_path = args.get(earlier);
      if (!earlier_path || key.empty() || output_detail::file_key(*earlier_path) != key) continue;
      err << flag << ": expected a file that no other output names, got " << quote(*path)
          << ", the file of " << earlier << "\n";
      twice = true;
      break;
    }
    if (twice) {
      ok = false;
      continue;
    }
    // Before the probe, which makes a dangling link's target exist.
    const std::string link_target = existed ? "" : output_detail::dangling_link_target(*path);
    {
      errno = 0;
      std::ofstream f(*path, std::ios::app);  // app: an existing file is not truncated
      if (!f) {
        err << flag << ": cannot write " << *path << output_detail::reason() << "\n";
        ok = false;
        continue;
      }
    }
    // The probe made the link's target exist: remove that, not the link.
    if (!existed) std::remove(link_target.empty() ? path->c_str() : link_target.c_str());
  }
  return ok;
}

namespace output_detail {

// The temporary files that exist right now, for the signal handler: a SIGINT, SIGTERM or SIGHUP
// while an output is being written removed nothing, and left PATH.tmp.PID beside the target. The
// handler may call only async-signal-safe functions (unlink, signal, raise), so the paths live in
// fixed buffers; one longer than a buffer, or past the table, is simply not removed on a signal.
struct PendingTemps {
  static constexpr int kSlots = 8;
  static constexpr std::size_t kPathMax = 4096;
  char path[kSlots][kPathMax];
  volatile std::sig_atomic_t used[kSlots];
};
inline PendingTemps& pending_temps() {
  static PendingTemps t{};
  return t;
}
extern "C" inline void remove_pending_temps_and_reraise(int sig) {
  PendingTemps& t = pending_temps();
  for (int i = 0; i < PendingTemps::kSlots; ++i)
    if (t.used[i] != 0) ::unlink(t.path[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
// Installs the handler once, for signals whose disposition is the default (`nohup` or a caller
// that ignores SIGHUP keeps it ignored).
inline void install_temp_cleanup() {
  static const bool installed = [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = remove_pending_temps_and_reraise;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
    return true;
  }();
  (void)installed;
}
// A slot for `path` (-1 when none is free or the path does not fit).
inline int track_temp(const std::string& path) {
  PendingTemps& t = pending_temps();  // initialised before the handler that reads it exists
  install_temp_cleanup();
  if (path.size() >= PendingTemps::kPathMax) return -1;
  for (int i = 0; i < PendingTemps::kSlots; ++i)
    if (t.used[i] == 0) {
      std::memcpy(t.path[i], path.c_str(), path.size() + 1);
      t.used[i] = 1;
      return i;
    }
  return -1;
}
inline void untrack_temp(int slot) {
  if (slot >= 0) pending_temps().used[slot] = 0;
}

}  // namespace output_detail

/// A run's output files, replaced together. commit() writes each to a temporary file beside its
/// target, then renames them over their targets only once every one was written completely: a
/// failure in any (a full disk, a writer that reports an error) removes every temporary file
/// and leaves every target as it was. Before, `simulate --trace T --summary /dev/full` had
/// already replaced T when the summary failed. A target that exists and is not a regular file
/// (/dev/null, /dev/full, a pipe) cannot be staged: it is written in place, after the others are
/// staged, every write and the close checked. Reports "wrote PATH (N bytes)" per file, in the
/// order added, once all are in place.
class OutputBatch {
 public:
  using Writer = std::function<bool(std::ostream&)>;
  explicit OutputBatch(std::ostream& err) : err_(err) {}
  OutputBatch(const OutputBatch&) = delete;
  OutputBatch& operator=(const OutputBatch&) = delete;
  ~OutputBatch() { discard(); }

  /// `write` returns false when what it wrote is wrong (it has said why on `err`).
  void add(std::string flag, std::string path, Writer write) {
    Output o;
    o.flag = std::move(flag);
    o.path = std::move(path);
    o.write = std::move(write);
    outputs_.push_back(std::move(o));
  }

  bool commit() {
    for (Output& o : outputs_)
      if (!prepare(o)) return fail();
    for (Output& o : outputs_)  // staged first: a failed in-place write then replaces nothing
      if (o.atomic && !stage(o)) return fail();
    for (Output& o : outputs_)
      if (!o.atomic && !stage(o)) return fail();
    for (Output& o : outputs_) {
      if (!o.atomic) continue;
      if (o.existed) ::chmod(o.temp.c_str(), o.mode & 07777);
      if (std::rename(o.temp.c_str(), o.real.c_str()) != 0) {
        err_ << o.flag << ": cannot replace " << o.path << output_detail::reason() << "\n";
        return fail();
      }
      output_detail::untrack_temp(o.slot);
      o.temp.clear();
    }
    for (const Output& o : outputs_) err_ << "wrote " << o.path << " (" << o.size << " bytes)\n";
    return true;
  }

 private:
  struct Output {
    std::string flag, path;
    Writer write;
    std::string real;  // the file replaced: `path`, or a symlink's target
    bool existed = false, atomic = true;
    mode_t mode = 0;
    std::string temp;  // while a staged file exists
    int slot = -1;     // its PendingTemps slot
    long long size = 0;
  };

  // The checks before anything is written: not a directory, not a file this run read.
  bool prepare(Output& o) {
    struct stat st {};
    o.existed = ::stat(o.path.c_str(), &st) == 0;
    if (o.existed && S_ISDIR(st.st_mode)) {
      err_ << o.flag << ": expected a regular file, got a directory: " << quote(o.path) << "\n";
      return false;
    }
    if (o.existed && S_ISREG(st.st_mode))
      for (const InputFileId& in : input_files_read())
        if (in.device == static_cast<std::uint64_t>(st.st_dev) &&
            in.inode == static_cast<std::uint64_t>(st.st_ino)) {
          err_ << o.flag << ": expected a file other than the input " << quote(in.path)
               << " (read for this run), got " << quote(o.path) << "; the file is unchanged\n";
          return false;
        }
    o.atomic = !o.existed || S_ISREG(st.st_mode);
    o.mode = st.st_mode;
    // A symlink to a file is written through: renaming over the link itself replaced it with a
    // regular file and left its target as it was.
    // An open descriptor's name (/dev/stdout, /dev/fd/N, /proc/self/fd/N) is written in place,
    // through the descriptor: replacing the file it resolves to would drop what `>> log` holds.
    for (const char* fd_name : {"/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/"})
      if (o.path.rfind(fd_name, 0) == 0) o.atomic = false;
    struct stat lst {};
    if (o.existed && o.atomic && ::lstat(o.path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
      if (char* real = ::realpath(o.path.c_str(), nullptr)) {
        o.real = real;
        std::free(real);  // NOLINT: realpath's buffer comes from malloc
      }
    if (!o.existed) o.real = output_detail::dangling_link_target(o.path);
    if (o.real.empty()) o.real = o.path;
    return true;
  }

  bool stage(Output& o) {
    const bool unchanged = o.existed || outputs_.size() > 1;
    std::string target = o.path;
    if (o.atomic) {
      // The index keeps two outputs' temporaries apart when they share a directory.
      o.temp = output_detail::temp_name(o.real, static_cast<std::size_t>(&o - outputs_.data()));
      o.slot = output_detail::track_temp(o.temp);
      target = o.temp;
    }
    errno = 0;
    // In place: appended, never truncated (O_TRUNC through /dev/stdout emptied a `>> log`).
    std::ofstream f(target, std::ios::binary | (o.atomic ? std::ios::trunc : std::ios::app));
    if (!f) {
      err_ << o.flag << ": cannot write " << o.path << output_detail::reason() << "\n";
      return false;
    }
    bool wrote = false;
    if (o.atomic) {
      wrote = o.write(f);
      f.flush();
      o.size = static_cast<long long>(f.tellp());
    } else {
      // A pipe or a device has no position (tellp said -1 bytes for `-o /dev/stdout | cat`, 0 for
      // /dev/null): the bytes are counted on their way through.
      output_detail::CountingBuf counted(f.rdbuf());
      std::ostream os(&counted);
      wrote = o.write(os);
      os.flush();
      if (!os) f.setstate(std::ios::badbit);
      f.flush();
      o.size = counted.count();
    }
    f.close();
    if (!f) {
      err_ << o.flag << ": write to " << o.path << " failed" << output_detail::reason()
           << (o.atomic && unchanged
                   ? (outputs_.size() > 1 ? "; no output was replaced" : "; the file is unchanged")
                   : "")
           << "\n";
      return false;
    }
    return wrote;
  }

  bool fail() {
    discard();
    return false;
  }
  void discard() {
    for (Output& o : outputs_) {
      if (o.temp.empty()) continue;
      std::remove(o.temp.c_str());
      output_detail::untrack_temp(o.slot);
      o.temp.clear();
    }
  }

  std::ostream& err_;
  std::vector<Output> outputs_;
};

/// Writes `path` with `write` (false: what it wrote is wrong, and it has said why on `err`);
/// false, and the existing file untouched, on any failure. Reports "wrote PATH (N bytes)".
inline bool write_file(const std::string& flag, const std::string& path, std::ostream& err,
                       const std::function<bool(std::ostream&)>& write) {
  OutputBatch batch(err);
  batch.add(flag, path, write);
  return batch.commit();
}

}  // namespace zerosim::cli

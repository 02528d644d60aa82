// read_input_file: stat first (refuse what is not a regular file, or too large), then open without
// blocking and read with a bound, so neither a FIFO nor a device nor a growing file can hang or
// exhaust a reader.
#include "zerosim/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace zerosim {

namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

std::string too_large(std::uint64_t cap, std::uint64_t size) {
  return "expected at most " + std::to_string(cap) + " bytes, got " + std::to_string(size) +
         " bytes";
}

// Closes the descriptor on every path out of read_input_file.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::mutex& read_mutex() {
  static std::mutex m;
  return m;
}

std::vector<InputFileId>& files_read() {
  static std::vector<InputFileId> files;
  return files;
}

void note_read(const struct stat& st, const std::string& path) {
  const std::lock_guard<std::mutex> lock(read_mutex());
  auto& files = files_read();
  const auto dev = static_cast<std::uint64_t>(st.st_dev),
             ino = static_cast<std::uint64_t>(st.st_ino);
  for (const InputFileId& f : files)
    if (f.device == dev && f.inode == ino) return;
  files.push_back({dev, ino, path});
}

}  // namespace

std::vector<InputFileId> input_files_read() {
  const std::lock_guard<std::mutex> lock(read_mutex());
  return files_read();
}

std::uint64_t max_input_bytes(Diagnostics& diags) {
  const char* env = std::getenv(kMaxInputBytesEnv);
  if (env == nullptr) return kDefaultMaxInputBytes;
  const std::string text(env);
  std::uint64_t v = 0;
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  if (ok) v = std::strtoull(text.c_str(), nullptr, 10);
  if (!ok || v == 0) {
    diags.error(kMaxInputBytesEnv, "", "expected an integer >= 1 (bytes), got " + quote(text));
    return 0;
  }
  return v;
}

bool read_input_file(const std::string& path, std::string& out, Diagnostics& diags) {
  const std::uint64_t cap = max_input_bytes(diags);
  if (cap == 0) return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    diags.error(path, "", std::string("cannot read file: ") + std::strerror(errno));
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    diags.error(path, "", "expected a regular file, got " + kind_of(st.st_mode));
    return false;
  }
  if (static_cast<std::uint64_t>(st.st_size) > cap) {
    diags.error(path, "", too_large(cap, static_cast<std::uint64_t>(st.st_size)),
                std::string("the input cap; set ") + kMaxInputBytesEnv + " to raise it");
    return false;
  }
  // O_NONBLOCK: should the path have been swapped for a FIFO since stat(), open does not wait for
  // a writer; fstat then refuses it.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    diags.error(path, "", std::string("cannot read file: ") + std::strerror(errno));
    return false;
  }
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    diags.error(path, "", "expected a regular file, got " + kind_of(st.st_mode));
    return false;
  }
  note_read(st, path);
  out.clear();
  out.reserve(static_cast<std::size_t>(st.st_size));
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      diags.error(path, "", std::string("cannot read file: ") + std::strerror(errno));
      return false;
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
    if (out.size() > cap) {  // the file grew while being read
      diags.error(path, "", too_large(cap, out.size()),
                  std::string("the input cap; set ") + kMaxInputBytesEnv + " to raise it");
      return false;
    }
  }
  return true;
}

}  // namespace zerosim

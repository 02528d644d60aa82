// Reading an input file whole: the one way zerosim opens a file it was given (JSON configs,
// scenarios, schedules, traces, collective logs, nccl-tests output).
//
// Only regular files are read: a directory, a FIFO, a socket or a device (/dev/zero, /dev/urandom)
// is refused from stat() before anything is opened, so a reader never blocks on a FIFO nor reads
// forever. A file larger than the input cap is refused too: 1 GiB, or ZEROSIM_MAX_INPUT_BYTES
// (an integer >= 1, in bytes) when that environment variable is set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"

namespace zerosim {

inline constexpr std::uint64_t kDefaultMaxInputBytes = std::uint64_t{1} << 30;  // 1 GiB
inline constexpr const char* kMaxInputBytesEnv = "ZEROSIM_MAX_INPUT_BYTES";

/// The input cap: ZEROSIM_MAX_INPUT_BYTES when set, else kDefaultMaxInputBytes. A malformed value
/// adds an error ("ZEROSIM_MAX_INPUT_BYTES: expected an integer >= 1, got ...") and returns 0.
std::uint64_t max_input_bytes(Diagnostics& diags);

/// Reads the regular file `path` into `out`. Failure adds one error naming the path and returns
/// false: "cannot read file: <reason>", "expected a regular file, got a directory" (a FIFO, a
/// character device, ...), or "expected at most N bytes, got M bytes".
bool read_input_file(const std::string& path, std::string& out, Diagnostics& diags);

/// A file read_input_file read in this process: its device and inode, and the path it was given.
struct InputFileId {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::string path;
};

/// Every file read_input_file has read in this process, first read first (thread-safe). Writers
/// refuse to replace one (cli/output_file.h write_file): an output flag can name a file that only
/// another input names (a scenario's param list, a trainer config's ds_config, config.json in an
/// --hf-config directory), which comparing the flags alone does not see.
std::vector<InputFileId> input_files_read();

}  // namespace zerosim

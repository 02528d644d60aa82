// Running a companion executable in this process's place: zerosim-cuda for `validate --backend
// cuda` (validate_cuda.cc) and zerosim-view for `view` (ui/app/view_launcher.cc), each built
// beside zerosim so that no other command loads their libraries.
#pragma once

#include <string>
#include <vector>

namespace zerosim::cli {

/// The path of `name` in the directory of the running executable (/proc/self/exe); empty when
/// that link cannot be read.
std::string beside_this_executable(const std::string& name);

/// Replaces this process with `program command args...` (standard output flushed first). Returns
/// only when execv failed: strerror of its errno.
std::string exec_companion(const std::string& program, const std::string& command,
                           const std::vector<std::string>& args);

}  // namespace zerosim::cli
